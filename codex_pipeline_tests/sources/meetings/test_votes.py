"""Motions and votes in council minutes (sources/meetings/votes.py): golden excerpts per house style,
the two Rivergrove OR minutes of the shared corpora, and properties on generated text."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_pipeline.sources.meetings.votes import Motion, find_motions
from codex_pipeline_tests.conftest import CORPORA, needs_corpus

RIVERGROVE = CORPORA / "pdf" / "rivergrove-or"


def check_spans(text: str, motions: list[Motion], lo: int = 0, hi: int | None = None) -> None:
    hi = len(text) if hi is None else min(hi, len(text))
    previous_end = lo
    for m in motions:
        assert previous_end <= m.start < m.end <= hi
        if m.vote_span is not None:
            assert m.start <= m.vote_span[0] < m.vote_span[1] <= m.end
        previous_end = m.end


def only(text: str) -> Motion:
    motions = find_motions(text)
    check_spans(text, motions)
    assert len(motions) == 1, motions
    return motions[0]


def vote_line(text: str, m: Motion) -> str | None:
    return None if m.vote_span is None else text[m.vote_span[0]:m.vote_span[1]]


# (excerpt, expected fields, the vote line) — one per format the minutes use.
GOLDEN = [
    pytest.param(
        "Motion: Mayor Kibbey moved that Council leave the record open for one week until Monday, August 20,\n"
        "2018. Councilor Tuttle seconded. Motion passed 5-0.",
        dict(mover="Mayor Kibbey", seconder="Councilor Tuttle", result="passed", ayes_count=5, noes_count=0,
             abstain_count=None, absent_count=None, unanimous=True),
        "Motion passed 5-0.", id="rivergrove-passed"),
    pytest.param(
        "Motion: Councilor Nyberg moved to accept the November 14, 2018 minutes with the following\n"
        "amendment. Councilor Tuttle seconded the motion. It passed 4-0. Councilor Ruble abstained.\n"
        "1. Note that there was an inconsistency in the duplex plans presented to Council.",
        dict(mover="Councilor Nyberg", seconder="Councilor Tuttle", result="passed", ayes_count=4, noes_count=0,
             abstain=("Councilor Ruble",), abstain_count=1, unanimous=False),
        "It passed 4-0. Councilor Ruble abstained.", id="rivergrove-abstained"),
    pytest.param(
        "Motion: Councilor Bahrman moved to close the public record. Councilor Tuttle seconded. Moved 5-0.",
        dict(mover="Councilor Bahrman", seconder="Councilor Tuttle", result="passed", ayes_count=5, noes_count=0),
        "Moved 5-0.", id="rivergrove-moved-tally"),
    pytest.param(
        "Motion: Councilor Nyberg moved that Ordinance #89-2018 be a read for the second reading, title only.\n"
        "The motion was seconded by Councilor Tuttle.\nMayor Kibbey read the ordinance by title only for the second time.",
        dict(mover="Councilor Nyberg", seconder="Councilor Tuttle", result=None, ayes_count=None, noes_count=None,
             unanimous=False, vote_span=None),
        None, id="rivergrove-no-result"),
    pytest.param(
        "Motion: Mayor Kibbey moved to accept the November 2018 financials as presented. Councilor Nyberg.\n"
        "seconded the motion. It passed 5-0.",
        dict(mover="Mayor Kibbey", seconder="Councilor Nyberg", result="passed", ayes_count=5),
        "It passed 5-0.", id="rivergrove-stray-period"),
    pytest.param(
        "Motion: Councilor Nyberg moved to adjourn the meeting. Seconded by Councilor Bahrman.\nThe motion passed 5-0.",
        dict(mover="Councilor Nyberg", seconder="Councilor Bahrman", result="passed", ayes_count=5, noes_count=0),
        "The motion passed 5-0.", id="rivergrove-seconded-by"),
    pytest.param(
        "MOTION: Councilmember Smith moved, seconded by Councilmember Lee, to adopt Resolution 2023-45.\n"
        "AYES: Smith, Lee, Garcia, Patel\nNOES: Nguyen\nABSENT: None\nABSTAIN: None",
        dict(mover="Councilmember Smith", seconder="Councilmember Lee", result="passed",
             ayes=("Smith", "Lee", "Garcia", "Patel"), noes=("Nguyen",), abstain=(), absent=(),
             ayes_count=4, noes_count=1, abstain_count=0, absent_count=0, unanimous=False),
        "AYES: Smith, Lee, Garcia, Patel\nNOES: Nguyen\nABSENT: None\nABSTAIN: None", id="brown-act-roll-call"),
    pytest.param(
        "Moved by Councilmember Garcia, seconded by Councilmember Patel, to award the contract.\n"
        "The motion carried by the following vote:\nAYES: Garcia, Patel, Smith\nNOES: Lee, Nguyen\n"
        "ABSENT: -\nRecess.",
        dict(mover="Councilmember Garcia", seconder="Councilmember Patel", result="passed",
             ayes=("Garcia", "Patel", "Smith"), noes=("Lee", "Nguyen"), absent=(), ayes_count=3, noes_count=2,
             absent_count=0, abstain_count=None),
        "The motion carried by the following vote:\nAYES: Garcia, Patel, Smith\nNOES: Lee, Nguyen\nABSENT: -",
        id="following-vote"),
    pytest.param(
        "MOTION: Councilmember Lee moved, seconded by Councilmember Patel, to deny the permit. "
        "Motion carried 4-1 (Nguyen dissenting)\n7. Public comment",
        dict(mover="Councilmember Lee", seconder="Councilmember Patel", result="passed", noes=("Nguyen",),
             ayes_count=4, noes_count=1, unanimous=False),
        "Motion carried 4-1 (Nguyen dissenting)", id="dissenting"),
    pytest.param(
        "On motion by Trustee Hall, seconded by Trustee Ito, the Board approved the plan. Ayes: 7; Noes: 0; Absent: 2",
        dict(mover="Trustee Hall", seconder="Trustee Ito", result="passed", ayes=(), ayes_count=7, noes_count=0,
             absent_count=2, abstain_count=None, unanimous=True),
        "Ayes: 7; Noes: 0; Absent: 2", id="inline-counts"),
    pytest.param(
        "M/S Brown/Green to approve the consent calendar. Carried 5-0.",
        dict(mover="Brown", seconder="Green", result="passed", ayes_count=5, noes_count=0, unanimous=True),
        "Carried 5-0.", id="m-s"),
    pytest.param(
        "M/S/C Brown/Green to approve the minutes of May 2.",
        dict(mover="Brown", seconder="Green", result="passed", vote_span=None), None, id="m-s-c"),
    pytest.param(
        "Moved by Alderman Jones, seconded by Alderman Price, to approve items 5.1 through 5.4. "
        "Motion carried unanimously.",
        dict(mover="Alderman Jones", seconder="Alderman Price", result="passed", unanimous=True, ayes_count=None,
             items=("5.1", "5.2", "5.3", "5.4")),
        "Motion carried unanimously.", id="moved-by-items-range"),
    pytest.param(
        "On a motion by Commissioner Reed, seconded by Commissioner Hall, the Commission voted 6-1 to deny the "
        "appeal, with Commissioner Ortiz voting no.",
        dict(mover="Commissioner Reed", seconder="Commissioner Hall", result="passed", ayes_count=6, noes_count=1,
             noes=("Commissioner Ortiz",), unanimous=False),
        "the Commission voted 6-1 to deny the appeal, with Commissioner Ortiz voting no.", id="on-a-motion-voted"),
    pytest.param(
        "Motion: Councilor Ames moved to approve the budget. Vote: 5-0",
        dict(mover="Councilor Ames", seconder=None, result="passed", ayes_count=5, noes_count=0),
        "Vote: 5-0", id="vote-label"),
    pytest.param(
        "Motion: Councilor Ames moved to rezone the lot. Councilor Bell seconded. The motion failed 2-3.",
        dict(result="failed", ayes_count=2, noes_count=3, unanimous=False),
        "The motion failed 2-3.", id="failed"),
    pytest.param(
        "Motion: Councilor Ames moved to rezone the lot. Motion failed for lack of a second.",
        dict(mover="Councilor Ames", seconder=None, result="died", ayes_count=None),
        "Motion failed for lack of a second.", id="died"),
    pytest.param(
        "Motion: Councilor Ames moved to rezone the lot. Councilor Bell seconded. The motion was tabled.",
        dict(result="tabled", ayes_count=None), "The motion was tabled.", id="tabled"),
    pytest.param(
        "Motion: Councilor Ames moved to rezone the lot. Councilor Bell seconded. Councilor Ames later withdrew "
        "the motion.",
        dict(result="withdrawn"), "withdrew the motion.", id="withdrawn"),
    pytest.param(
        "Motion: Councilor Ames moved to approve the minutes. Councilor Bell seconded. All in favor. Motion carried.",
        dict(result="passed", unanimous=True, ayes_count=None, noes_count=None),
        "All in favor. Motion carried.", id="all-in-favor"),
    pytest.param(
        "Motion: Councilor Ames moved to approve the lease. Councilor Bell seconded.\n"
        "Roll call: Smith - aye; Lee - aye; Nguyen - nay",
        dict(result="passed", ayes=("Smith", "Lee"), noes=("Nguyen",), ayes_count=2, noes_count=1),
        "Roll call: Smith - aye; Lee - aye; Nguyen - nay", id="roll-call-entries"),
    pytest.param(
        "Motion: Councilor Ames moved to approve the lease.\nYes: Smith, Lee\nNo: Nguyen\n",
        dict(result="passed", ayes=("Smith", "Lee"), noes=("Nguyen",), ayes_count=2, noes_count=1),
        "Yes: Smith, Lee\nNo: Nguyen", id="yes-no-labels"),
    pytest.param(
        "Motion: Councilor Ames moved to approve the lease. Councilor Bell seconded. The motion passed four to one.",
        dict(result="passed", ayes_count=4, noes_count=1), "The motion passed four to one.", id="number-words"),
    pytest.param(
        "Motion: Councilor Ames moved to approve the lease. Councilor Bell seconded. The motion carried 5 to 0.",
        dict(result="passed", ayes_count=5, noes_count=0, unanimous=True), "The motion carried 5 to 0.",
        id="digits-to"),
    pytest.param(
        "Councilor Smith moved to approve Consent Agenda items A-1 through A-5; Councilor Lee seconded. Carried.",
        dict(mover="Councilor Smith", seconder="Councilor Lee", result="passed", items=("A-1", "A-2", "A-3", "A-4", "A-5")),
        "Carried.", id="bare-moved-consent-items"),
    pytest.param(
        "Mayor Kibbey moved to approve items 3, 4 and 7. Seconded by Councilor Tuttle. Passed 5-0.",
        dict(mover="Mayor Kibbey", items=("3", "4", "7"), ayes_count=5), "Passed 5-0.", id="items-list"),
    pytest.param(
        "Motion: Councilor Ames moved to adopt the code. Councilor Bell seconded. The motion passed 5-1-1.",
        dict(ayes_count=5, noes_count=1, abstain_count=1, unanimous=False), "The motion passed 5-1-1.",
        id="three-part-tally"),
    pytest.param(  # the tally and the names disagree: the tally's counts, the names as listed
        "Motion: Councilor Ames moved to adopt the code. The motion carried 5-0.\nAYES: Ames, Bell, Cruz\nNOES: None",
        dict(ayes=("Ames", "Bell", "Cruz"), noes=(), ayes_count=5, noes_count=0),
        "The motion carried 5-0.\nAYES: Ames, Bell, Cruz\nNOES: None", id="tally-wins-over-names"),
    pytest.param(
        "Motion by Councilmember Smith, second by Councilmember Lee, to approve. Motion carried 5-0.",
        dict(mover="Councilmember Smith", seconder="Councilmember Lee", result="passed", ayes_count=5),
        "Motion carried 5-0.", id="motion-by-second-by"),
    pytest.param(
        "It was moved by Commissioner Abel and seconded by Commissioner Baker to approve the minutes. "
        "The motion carried unanimously.",
        dict(mover="Commissioner Abel", seconder="Commissioner Baker", unanimous=True),
        "The motion carried unanimously.", id="it-was-moved"),
    pytest.param(
        "Councilmember Smith made a motion to approve, seconded by Councilmember Lee. Motion passed 5-0.",
        dict(mover="Councilmember Smith", seconder="Councilmember Lee"), "Motion passed 5-0.", id="made-a-motion"),
    pytest.param(
        "MOTION: To approve the agenda as presented. Moved by Director Cole, seconded by Director Diaz.\nMotion carried.",
        dict(mover="Director Cole", seconder="Director Diaz", result="passed", unanimous=False),
        "Motion carried.", id="label-then-moved-by"),
    pytest.param(
        "MOTION: Councilmember Smith moved to adopt.\nAYES: Councilmembers Smith, Lee and Garcia\nNOES: None\n"
        "ABSENT: Councilmember Patel",
        dict(ayes=("Smith", "Lee", "Garcia"), noes=(), absent=("Councilmember Patel",), ayes_count=3, noes_count=0,
             absent_count=1, unanimous=True),
        "AYES: Councilmembers Smith, Lee and Garcia\nNOES: None\nABSENT: Councilmember Patel", id="plural-title"),
    pytest.param(
        "Motion: Trustee Ames moved to adopt. Ayes: 5 (Smith, Lee, Garcia, Patel, Nguyen); Nays: 0.",
        dict(ayes=("Smith", "Lee", "Garcia", "Patel", "Nguyen"), ayes_count=5, noes=(), noes_count=0),
        "Ayes: 5 (Smith, Lee, Garcia, Patel, Nguyen); Nays: 0", id="count-with-names"),
    pytest.param(
        "Motion: Trustee Ames moved to adopt. Motion carried 4-1. Councilmember Lee voted no.",
        dict(noes=("Councilmember Lee",), ayes_count=4, noes_count=1), "Motion carried 4-1. Councilmember Lee voted no.",
        id="voted-no-after"),
    pytest.param(
        "Motion: Councilor Ames moved to adjourn.\nCouncilor Bell seconded.\nAYES: 5 NOES: 0\nThe meeting ended.",
        dict(seconder="Councilor Bell", result="passed", ayes_count=5, noes_count=0), "AYES: 5 NOES: 0",
        id="caps-labels-one-line"),
    pytest.param(
        "Moved by Trustee Abel, seconded by Trustee Baker, and carried unanimously.",
        dict(mover="Trustee Abel", seconder="Trustee Baker", result="passed", unanimous=True),
        "carried unanimously.", id="and-carried"),
    pytest.param(  # a wrapped statement over a PDF page break (running footer, page number)
        "Motion: Councilor Nyberg moved that Ordinance #89-2018 be a read for the third reading, title only. The\n"
        "motion was seconded by Councilor\n\nCity of Rivergrove Minutes\n6\nTuttle. The motion passed 5-0.",
        dict(mover="Councilor Nyberg", result="passed", ayes_count=5), "The motion passed 5-0.", id="page-break"),
]


@pytest.mark.parametrize(("text", "expected", "line"), GOLDEN)
def test_golden(text: str, expected: dict, line: str | None) -> None:
    m = only(text)
    assert {k: getattr(m, k) for k in expected} == expected
    assert vote_line(text, m) == line
    assert m.end == (m.vote_span[1] if m.vote_span else m.end)


def test_vote_without_statement_is_a_motion_of_its_own() -> None:
    text = "5. Resolution 2023-46 approving the street plan\nAYES: Smith, Lee, Garcia\nNOES: Patel\nABSENT: Nguyen\n"
    m = only(text)
    assert (m.mover, m.seconder, m.result) == (None, None, "passed")
    assert (m.ayes_count, m.noes_count, m.absent, m.absent_count) == (3, 1, ("Nguyen",), 1)
    assert vote_line(text, m) == "AYES: Smith, Lee, Garcia\nNOES: Patel\nABSENT: Nguyen"
    assert m.start == m.vote_span[0] and m.end == m.vote_span[1]  # type: ignore[index]


def test_motions_stop_at_the_next_one_and_keep_their_own_votes() -> None:
    text = ("Motion: Councilor Nyberg moved that Ordinance #89-2018 be adopted. The motion was seconded by Councilor Tuttle.\n"
            "Mayor Kibbey read the ordinance by title only.\n"
            "Motion: Councilor Nyberg moved to adopt Ordinance 88-2018. Seconded by Councilor Tuttle. The motion passed 5-0.")
    first, second = find_motions(text)
    assert (first.result, first.vote_span) == (None, None)
    assert text[first.start:first.end].endswith("seconded by Councilor Tuttle.")
    assert second.result == "passed" and vote_line(text, second) == "The motion passed 5-0."


def test_range_limits_and_offsets() -> None:
    item = "M/S Brown/Green to approve the warrant. Carried 5-0.\n"
    text = item + item
    both = find_motions(text)
    assert [m.start for m in both] == [0, len(item)]
    second = find_motions(text, len(item), len(text))
    assert second == [both[1]]
    assert find_motions(text, 0, len(item)) == [both[0]]
    assert find_motions(text, 5, 5) == [] and find_motions("") == []


@pytest.mark.parametrize("prose", [
    "He moved to Portland in 1998 and later joined the Planning Commission.",
    "The motion picture shown at the library was well attended.",
    "She seconded that thought and asked about the boat ramp.",
    "Ms. Slater explained that she is new to the neighborhood and moved to Rivergrove in 2015.",
    "When he moved in 40+ years ago, no one knew about the ramp.",
    "Mr. Knighte said the river moved quickly. He passed the ramp daily.",
])
def test_prose_is_not_a_motion(prose: str) -> None:
    assert find_motions(prose) == []


@needs_corpus(RIVERGROVE / "2018-12-10-Minutes.pdf", RIVERGROVE / "2018-08-13-Minutes.pdf")
def test_rivergrove_minutes() -> None:
    from codex_pipeline.sources.documents import pdf_document

    def motions(name: str) -> tuple[str, list[Motion]]:
        text = pdf_document(RIVERGROVE / name, name, []).text
        found = find_motions(text)
        check_spans(text, found)
        return text, found

    text, december = motions("2018-12-10-Minutes.pdf")
    assert [(m.mover, m.seconder, m.result, m.ayes_count, m.noes_count) for m in december] == [
        ("Councilor Tuttle", "Councilor Bahrman", "passed", 5, 0),
        ("Councilor Bahrman", "Councilor Tuttle", "passed", 5, 0),
        ("Councilor Nyberg", "Councilor Tuttle", None, None, None),
        ("Councilor Nyberg", "Councilor Tuttle", None, None, None),
        ("Councilor Nyberg", "Councilor Tuttle", None, None, None),
        ("Councilor Nyberg", "Councilor Tuttle", "passed", 5, 0),
        ("Councilor Nyberg", "Councilor Ruble", "passed", 5, 0),
        ("Councilor Nyberg", "Councilor Tuttle", "passed", 4, 0),
        ("Mayor Kibbey", "Councilor Nyberg", "passed", 5, 0),
        ("Councilor Nyberg", "Councilor Bahrman", "passed", 5, 0),
    ]
    assert december[7].abstain == ("Councilor Ruble",)
    assert vote_line(text, december[7]) == "It passed 4-0. Councilor Ruble abstained."
    assert all(text[m.start:m.end].startswith("Motion:") for m in december)

    text, august = motions("2018-08-13-Minutes.pdf")  # 400 lines of testimony: "moved to Rivergrove", ...
    assert [(m.mover, m.seconder, m.result, m.ayes_count) for m in august] == [
        ("Mayor Kibbey", "Councilor Tuttle", "passed", 5),
        ("Mayor Kibbey", "Councilor Tuttle", "passed", 5),
        ("Mayor Kibbey", None, "passed", 5),
    ]
    assert [vote_line(text, m) for m in august] == ["Motion passed 5-0.", "Motion passed 5-0.", "The motion passed 5-0."]


# --- properties -----------------------------------------------------------------------------------

# Made-up surnames from syllables: random, yet never one of the words that open sentences or vote lines.
SURNAMES = st.builds(lambda a, b: a + b, st.sampled_from(["Kib", "Ny", "Tut", "Bahr", "Ru", "Or", "Gar", "Pat", "Wen", "Lo"]),
                     st.sampled_from(["bey", "berg", "tle", "man", "ble", "tiz", "cia", "el", "dell", "son"]))
TITLES = st.sampled_from(["Councilor", "Mayor", "Commissioner", "Alderman", "Councilmember", "Trustee"])
PLACES = st.sampled_from(["Portland", "Rivergrove", "Lake Oswego", "the river", "Tualatin"])
PROSE = st.one_of(
    st.builds("{} moved to {} in {}.".format, SURNAMES, PLACES, st.integers(1950, 2020)),
    st.builds("Ms. {} explained that she moved to {} in {}.".format, SURNAMES, PLACES, st.integers(1950, 2020)),
    st.just("The motion picture was shown at the library."),
    st.just("She seconded that thought."),
    st.just("He moved the chairs before the meeting."),
    st.builds("{} {} asked about the fee of ${} for each tree.".format, TITLES, SURNAMES, st.integers(1, 9000)),
    st.builds("Mr. {} said the ramp was busy on {} weekends.".format, SURNAMES, st.integers(2, 12)),
    st.just("Council discussed the boat ramp ordinance at length."),
)
PARAGRAPHS = st.lists(PROSE, max_size=8).map(lambda sentences: "\n".join(sentences))

# Text drawn from the parser's own vocabulary, to reach its corners.
TOKENS = st.sampled_from([
    "Motion: ", "MOTION:", "Councilor Smith ", "Mayor Lee", " moved ", " seconded ", "Seconded by ", "M/S ", "Brown/Green",
    "On a motion by ", "Moved by ", "5-0", " 4 to 1", "four", " passed", "The motion carried", " failed", "It passed ",
    "AYES: ", "NOES: ", "None", "-", "ABSENT:", "Roll call: ", "Smith - aye; ", "Nguyen - nay", "(Nguyen dissenting)",
    " abstained.", "with Commissioner Ortiz voting no", "items 3 through 5", "All in favor.", "Vote:", "for lack of a second",
    "\n", "\n\n", ". ", ", ", "; ", " and ", "the", "to approve", "Councilor.", "\nseconded", " ", "A-1", "tabled",
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=400), st.lists(TOKENS, max_size=60).map("".join)), st.data())
def test_never_raises_and_spans_stay_in_bounds(text: str, data: st.DataObject) -> None:
    lo = data.draw(st.integers(0, len(text) + 2))
    hi = data.draw(st.one_of(st.none(), st.integers(0, len(text) + 2)))
    motions = find_motions(text, lo, hi)
    if hi is not None and hi <= lo:
        assert motions == []
    check_spans(text, motions, lo, hi)
    for m in motions:
        for count, names in ((m.ayes_count, m.ayes), (m.noes_count, m.noes), (m.abstain_count, m.abstain),
                             (m.absent_count, m.absent)):
            assert count is None or count >= 0
            assert not names or count is not None
        assert m.result in (None, "passed", "failed", "tabled", "withdrawn", "died")


@settings(max_examples=200, deadline=None)
@given(PARAGRAPHS)
def test_prose_without_motion_cues_yields_nothing(text: str) -> None:
    assert find_motions(text) == []


@st.composite
def motion_blocks(draw: st.DrawFn) -> tuple[str, dict]:
    title, mover, seconder = draw(TITLES), draw(SURNAMES), draw(SURNAMES)
    ayes, noes = draw(st.integers(0, 9)), draw(st.integers(0, 9))
    verb = "passed" if ayes > noes else "failed"
    style = draw(st.sampled_from(["rivergrove", "m/s", "moved by", "roll call"]))
    expected = dict(mover=f"{title} {mover}", seconder=f"{title} {seconder}", ayes_count=ayes, noes_count=noes,
                    result="passed" if ayes > noes else "failed")
    if style == "rivergrove":
        block = (f"Motion: {title} {mover} moved to approve the\nminutes as presented. {title} {seconder} seconded. "
                 f"The motion {verb} {ayes}-{noes}.")
    elif style == "m/s":
        block = f"M/S {mover}/{seconder} to approve the warrant. {verb.capitalize()} {ayes}-{noes}."
        expected.update(mover=mover, seconder=seconder)
    elif style == "moved by":
        block = (f"Moved by {title} {mover}, seconded by {title} {seconder}, to approve the plan.\n"
                 f"Motion {'carried' if ayes > noes else 'failed'} {ayes} to {noes}.")
    else:
        yes = draw(st.lists(SURNAMES, min_size=ayes, max_size=ayes))
        no = draw(st.lists(SURNAMES, min_size=noes, max_size=noes))
        block = (f"MOTION: {title} {mover} moved, seconded by {title} {seconder}, to adopt Resolution 2023-45.\n"
                 f"AYES: {', '.join(yes) or 'None'}\nNOES: {', '.join(no) or 'None'}\nABSENT: None")
        expected.update(ayes=tuple(yes), noes=tuple(no), absent=(), absent_count=0)
    return block, expected


@settings(max_examples=200, deadline=None)
@given(PARAGRAPHS, motion_blocks(), PARAGRAPHS)
def test_a_motion_in_prose_is_found_exactly(before: str, block_expected: tuple[str, dict], after: str) -> None:
    block, expected = block_expected
    head = before + "\n" if before else ""
    text = head + block + ("\n" + after if after else "")
    m = only(text)
    assert {k: getattr(m, k) for k in expected} == expected
    assert (m.start, m.end) == (len(head), len(head) + len(block))
