"""The agenda outline: items by sequence, headings as parents only when numbering restarts under them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codex_pipeline.sources.meetings.outline import parse_outline

HUNTSVILLE_STYLE = """CALL TO ORDER
1. INVOCATION
Offered by: Public Safety Chaplains
2. APPROVAL OF THE AGENDA
3. PUBLIC HEARINGS TO BE SET
a. Resolution to set a public hearing on the zoning of 2.41 acres of land lying on the
west side of Old Big Cove Road.
Resolution No. 26-490
b. Resolution to set a public hearing on the zoning of 2.47 acres.
4. NEW BUSINESS ITEMS FOR CONSIDERATION OR ACTION
These items will be approved in one motion unless any member of the Council wishes to remove an item.
a. Resolution authorizing travel expenses.
b. Resolution authorizing the Mayor to enter into agreements.
5. ADJOURNMENT
"""

RIVERGROVE_STYLE = """Rivergrove City Council Meeting Minutes
CALL TO ORDER AND ROLL CALL
The meeting was called to order at 7:08 p.m.
UNFINISHED BUSINESS
1. Review of Notice of Decision for a development permit
Motion: Councilor Tuttle moved to approve. Councilor Bahrman seconded. The motion passed 5-0.
2. Continuation of the Type IV Hearing
CONSENT AGENDA
1. Minutes from the November 14, 2018 City Council Meeting
Motion: Councilor Nyberg moved to accept the minutes with the following
amendment. Councilor Tuttle seconded the motion. It passed 4-0.
1. Note that there was an inconsistency in the duplex plans presented to Council.
2. Financials - November 2018
ADJOURNMENT
"""


def keys(text: str) -> list[str]:
    return [i.key for i in parse_outline(text).items]


def test_one_numbered_series_keeps_headings_beside_items() -> None:
    outline = parse_outline(HUNTSVILLE_STYLE)
    assert outline.mode == "flat"
    assert [i.key for i in outline.items] == ["call-to-order", "1", "2", "3", "3.a", "3.b", "4", "4.a", "4.b", "5"]
    by_key = {i.key: i for i in outline.items}
    assert by_key["3.a"].parent == "3" and by_key["3.a"].depth == 1
    assert by_key["3.a"].title.endswith("Old Big Cove Road.")  # the wrapped title
    assert by_key["4"].consent and not by_key["3"].consent


def test_numbering_that_restarts_nests_under_headings() -> None:
    outline = parse_outline(RIVERGROVE_STYLE)
    assert outline.mode == "nested"
    assert keys(RIVERGROVE_STYLE) == ["rivergrove-city-council-meeting-minutes"][:0] + ["call-to-order-and-roll-call", "unfinished-business", "unfinished-business.1",
                                      "unfinished-business.2", "consent-agenda", "consent-agenda.1",
                                      "consent-agenda.2", "adjournment"]
    assert {i.key: i.consent for i in outline.items}["consent-agenda"]


def test_item_spans_tile_the_text_after_the_first_item() -> None:
    items = parse_outline(HUNTSVILLE_STYLE).items
    assert all(a.end == b.start for a, b in zip(items, items[1:]))
    assert items[-1].end == len(HUNTSVILLE_STYLE)
    for i in items:
        assert HUNTSVILLE_STYLE[i.start : i.title_end].strip().endswith(i.title.split()[-1])


def test_running_lines_are_never_items() -> None:
    text = "1. First item\nPAGE HEADER OF THE CITY\n2. Second item\n"
    start = text.index("PAGE")
    assert "page-header-of-the-city" in keys(text)  # unless the layout says it runs on every page
    assert [i.key for i in parse_outline(text, [(start, start + 23)]).items] == ["1", "2"]


def test_dotted_and_prefixed_numbers() -> None:
    text = "5. Reports\n5.1 Budget report\n5.2 Audit report\nA-1 Consent item one\nA-2 Consent item two\n"
    assert keys(text) == ["5", "5.1", "5.2", "A-1", "A-2"]
    assert keys("5.100. This is clearly stated in the ordinance\n") == []  # starts no series


def test_condition_lists_are_conditions_not_items() -> None:
    text = ("1. Site plan for 12 Oak St\nApproved subject to the following conditions:\n"
            "1. The applicant shall plant four trees.\n2. Hours of work are limited to 8 a.m. to 6 p.m.\n"
            "2. Next item\n")
    outline = parse_outline(text)
    assert [i.key for i in outline.items] == ["1", "2"]
    assert [text[c.start : c.end] for c in outline.conditions] == [
        "1. The applicant shall plant four trees.", "2. Hours of work are limited to 8 a.m. to 6 p.m."]


@given(st.text(alphabet=st.sampled_from(list("1aA.)- \nIVXitemNEWBUSINESSconsent:")), max_size=400))
def test_any_text_gives_ordered_disjoint_items(text: str) -> None:
    outline = parse_outline(text)
    last_end = 0
    for item in outline.items:
        assert last_end <= item.start < item.end <= len(text)
        assert item.start <= item.title_end <= item.end
        last_end = item.end
    assert len({i.key for i in outline.items}) == len(outline.items)


def test_roman_one_opens_before_the_letter_i() -> None:
    text = "I. Call to Order & Roll Call\nII. Adoption of the Minutes\nIII. New Business\na. Project one\nb. Project two\n"
    assert keys(text) == ["I", "II", "III", "III.a", "III.b"]
