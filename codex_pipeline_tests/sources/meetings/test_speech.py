"""Transcripts without speakers cut into sentence-bounded segments (sources/meetings/speech.py, issue 41)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.sources.meetings import speech
from codex_pipeline.sources.meetings.speech import (
    MAX_TOKENS,
    MIN_TOKENS,
    Segment,
    chair_announcements,
    clock_marks,
    segments,
    sentences,
    transcript_style,
)
from codex_pipeline_tests.conftest import CORPORA, FIXTURES, needs_corpus

CAPTIONS_DIR = CORPORA / "council_captions" / "huntsville-al"
DIARIZED_DIR = CORPORA / "council"

# Written independently of the module: a bare [H:MM:SS] line.
CLOCK_LINE = re.compile(r"^[ \t]*\[\d{1,2}:\d{2}:\d{2}\][ \t\r]*$", re.M)


# -- the accounting every segmentation must pass ---------------------------------------------------


def _clock_lines(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in CLOCK_LINE.finditer(text)]


def _outside_clock_lines(text: str) -> np.ndarray:
    keep = np.array([not c.isspace() for c in text], dtype=bool)
    for a, b in _clock_lines(text):
        keep[a:b] = False
    return keep


def check_spans(text: str, spans: list[tuple[int, int]]) -> None:
    """Ordered, non-overlapping, trimmed, and covering every non-blank char outside clock lines exactly once."""
    cover = np.zeros(len(text), dtype=np.int64)
    prev_end = 0
    for s, e in spans:
        assert prev_end <= s < e <= len(text), (s, e)
        assert not text[s].isspace() and not text[e - 1].isspace(), (s, e)
        cover[s:e] += 1
        prev_end = e
    need = _outside_clock_lines(text)
    assert (cover[need] == 1).all(), [text[i] for i in np.flatnonzero(need & (cover != 1))[:10]]
    for a, b in _clock_lines(text):
        assert not cover[a:b].any(), "a timestamp line inside a span"


def _same_block(text: str, left: Segment, right: Segment) -> bool:
    return CLOCK_LINE.search(text, left.end, right.start) is None


def check_segments(text: str, segs: list[Segment], min_tokens: int = MIN_TOKENS, max_tokens: int = MAX_TOKENS) -> None:
    check_spans(text, [(g.start, g.end) for g in segs])
    sents = sentences(text)
    check_spans(text, sents)
    starts, ends = {s for s, _ in sents}, {e for _, e in sents}
    long_sentences = [(s, e) for s, e in sents if count_tokens(text[s:e]) > max_tokens]
    marks = [(line_start, clock_offset, clock) for (line_start, _), (clock_offset, clock)
             in zip(_clock_lines(text), clock_marks(text))]
    for k, g in enumerate(segs):
        n = count_tokens(text[g.start:g.end])
        assert g.tokens == n <= max_tokens, (g, n)
        # whole sentences, unless a sentence alone is over max_tokens
        for at, bounds in ((g.start, starts), (g.end, ends)):
            assert at in bounds or any(s <= at <= e for s, e in long_sentences), (g, text[g.start:g.end])
        # under min_tokens only when no neighbour between the same marks could take it
        if n < min_tokens:
            for left, right in ((segs[k - 1], g) if k else (None, None), (g, segs[k + 1]) if k + 1 < len(segs)
                                else (None, None)):
                if left is not None and right is not None and _same_block(text, left, right):
                    assert count_tokens(text[left.start:right.end]) > max_tokens, (left, right)
        # the clock is the last mark at or before the segment
        before = [m for m in marks if m[0] <= g.start]
        if before:
            assert (g.clock_offset, g.clock) == before[-1][1:]
            assert text[g.clock_offset:g.clock_offset + len(g.clock)] == g.clock
        else:
            assert g.clock is None and g.clock_offset is None
        assert g.sentences >= 1


# -- golden: captions ---------------------------------------------------------------------------

# Copied from the Huntsville, AL captions of 2026-06-11 (corpus council_captions/, public record).
CAPTIONS = """[00:00:17]
Let's do it.
Welcome everyone.
It is Thursday, June 11th, 2026, 5:30 p.m.,
and we will call this meeting of the Huntsville City Council to order.
We are met in the chambers in Huntsville,
Alabama.
Tonight we are joined by Chaplain Don Eadie,
and after the invocation we will have Mr.
Little, um, lead us in the Pledge of Allegiance.
Uh, no matters with legal representatives,
and this brings us to public hearings to be held.

[00:11:20]
Uh, 9A is a public hearing on a resolution authorizing the demolition of
an unsafe building constituting a public nuisance located at 303804 Melody
Road Northeast, Huntsville, Alabama, and consideration of a resolution pertaining
to the same.
We'll begin with item 20E.
20E is an ordinance appointing the election officials for the August 25,

[01:25:01]
2026 city council municipal election and if necessary,
the September 22, 2026 runoff election.
Is there a motion to approve?
"""


def _texts(text: str, spans: list[tuple[int, int]]) -> list[str]:
    return [text[s:e] for s, e in spans]


def test_caption_line_breaks_are_not_sentence_ends() -> None:
    got = _texts(CAPTIONS, sentences(CAPTIONS))
    assert got[:5] == [
        "Let's do it.",
        "Welcome everyone.",
        "It is Thursday, June 11th, 2026, 5:30 p.m.,\nand we will call this meeting of the Huntsville City Council "
        "to order.",
        "We are met in the chambers in Huntsville,\nAlabama.",
        "Tonight we are joined by Chaplain Don Eadie,\nand after the invocation we will have Mr.\nLittle, um, lead "
        "us in the Pledge of Allegiance.",
    ]
    check_spans(CAPTIONS, sentences(CAPTIONS))


def test_a_timestamp_line_ends_a_sentence_and_belongs_to_none() -> None:
    got = _texts(CAPTIONS, sentences(CAPTIONS))
    assert "20E is an ordinance appointing the election officials for the August 25," in got
    assert "2026 city council municipal election and if necessary,\nthe September 22, 2026 runoff election." in got
    assert not any("[" in s for s in got)


def test_segments_carry_the_clock_before_them() -> None:
    segs = segments(CAPTIONS, min_tokens=20, max_tokens=60)
    check_segments(CAPTIONS, segs, 20, 60)
    assert [g.clock for g in segs][0] == "00:00:17"
    assert {g.clock for g in segs} == {"00:00:17", "00:11:20", "01:25:01"}
    last = segs[-1]
    assert (last.clock, CAPTIONS[last.clock_offset:last.clock_offset + 8]) == ("01:25:01", "01:25:01")
    # the stretch after the last mark is short: its only segment is under min_tokens, and that is allowed
    assert CAPTIONS[last.start:last.end].startswith("2026 city council") and last.tokens < 60


def test_text_before_the_first_mark_has_no_clock() -> None:
    text = "Good evening.\nWe are met in the chambers.\n\n[00:05:00]\nNext is the consent agenda.\n"
    segs = segments(text, min_tokens=0, max_tokens=50)
    assert [(text[g.start:g.end], g.clock) for g in segs] == [
        ("Good evening.\nWe are met in the chambers.", None), ("Next is the consent agenda.", "00:05:00")]
    assert segs[1].clock_offset == text.index("00:05:00")


def test_default_segments_of_the_captions_excerpt() -> None:
    segs = segments(CAPTIONS)
    check_segments(CAPTIONS, segs)
    assert [g.clock for g in segs] == ["00:00:17", "00:11:20", "01:25:01"]  # each stretch is under max_tokens
    assert [g.sentences for g in segs] == [6, 3, 2]


def test_the_text_is_never_normalized() -> None:
    text = "  Uh,  we'll begin.\r\nWith item 5.\r\n\r\n[00:00:05]\r\nThank you.  "
    segs = segments(text, min_tokens=0, max_tokens=40)
    assert [text[g.start:g.end] for g in segs] == ["Uh,  we'll begin.\r\nWith item 5.", "Thank you."]
    check_segments(text, segs, 0, 40)


def test_nothing_to_segment() -> None:
    assert segments("") == [] and segments(" \n\n[00:00:01]\n\n") == [] and sentences("[00:01:02]") == []


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError):
        segments("Hi.", min_tokens=100, max_tokens=50)
    with pytest.raises(ValueError):
        segments("Hi.", min_tokens=0, max_tokens=2)


# -- golden: one-line text ------------------------------------------------------------------------

# Copied from the Whisper transcript of the same meeting (one line, no newline).
WHISPER = ("and we will call this meeting of the Huntsville City Council to order. We are met in the chambers in "
           "Huntsville, Alabama. Tonight we are joined by Chaplain Don Eady and after the invocation we will have "
           "Mr. Little Little lead us in the Pledge of Allegiance. So all who are willing and able, please stand "
           "for the invocation and Pledge of Allegiance.")
# From the 2026-07-23 Whisper transcript: long stretches with no punctuation at all.
RUN_ON = ("all in favor please indicate I pose motion carries thank you all very much we have one public hearing to "
          "set 10a is a resolution to set a public hearing on the rezoning of 12.50 acres of land lying on the east "
          "side of Leman Ferry Road north of Phil Dots Drive and east of Memorial Parkway from commercial recreation "
          "c5 district to highway business c4 district and introduction of an ordinance to rezone the same is there "
          "a motion to set the hearing motion from mr. Meredith second from miss Watkins all in favor please "
          "indicate I oppose motion carries the hearing is set brings us to agenda related public comments and we "
          "do not have anyone signed up on agenda related comments")


def test_one_line_sentences() -> None:
    assert _texts(WHISPER, sentences(WHISPER)) == [
        "and we will call this meeting of the Huntsville City Council to order.",
        "We are met in the chambers in Huntsville, Alabama.",
        "Tonight we are joined by Chaplain Don Eady and after the invocation we will have Mr. Little Little lead us "
        "in the Pledge of Allegiance.",
        "So all who are willing and able, please stand for the invocation and Pledge of Allegiance.",
    ]
    segs = segments(WHISPER, min_tokens=10, max_tokens=40)
    check_segments(WHISPER, segs, 10, 40)
    assert [g.sentences for g in segs] == [2, 1, 1] and all(g.clock is None for g in segs)


def test_a_sentence_over_max_is_cut_at_words_into_even_pieces() -> None:
    assert len(sentences(RUN_ON)) == 1
    total = count_tokens(RUN_ON)
    segs = segments(RUN_ON, min_tokens=10, max_tokens=60)
    check_segments(RUN_ON, segs, 10, 60)
    assert len(segs) == -(-total // (60 - 3))  # as few pieces as the limit allows
    sizes = [g.tokens for g in segs]
    assert max(sizes) - min(sizes) <= 30, sizes  # nearly equal
    for g in segs:  # at word boundaries
        assert g.start == 0 or RUN_ON[g.start - 1] == " "
        assert g.end == len(RUN_ON) or RUN_ON[g.end] == " "


def test_a_cut_moves_to_where_the_chair_announces_an_item() -> None:
    before = "we thank everyone for coming out tonight and for the good work " * 5  # 61 tokens
    after = "to set a public hearing on the rezoning of land east of the parkway " * 10
    for said, at_announcement in (("12b is a resolution ", True), ("12b was a resolution ", False)):
        text = before + said + after  # 227 tokens: three pieces of about 76
        assert len(sentences(text)) == 1
        segs = segments(text, min_tokens=0, max_tokens=100)
        assert len(segs) == 3 and all(g.tokens <= 100 for g in segs)
        assert text[segs[1].start:].startswith("12b") is at_announcement


def test_a_cut_prefers_a_comma() -> None:
    words = " ".join(f"word{i}" for i in range(60))
    text = words.replace("word31 ", "word31, ")
    segs = segments(text, min_tokens=0, max_tokens=120)
    assert len(segs) == 2 and text[segs[0].start:segs[0].end].endswith("word31,")


def test_a_giant_word_is_cut_between_tokens() -> None:
    text = "Thanks. " + "abcdefgh" * 300 + " end."
    segs = segments(text, min_tokens=0, max_tokens=50)
    check_segments(text, segs, 0, 50)
    assert "".join(text[g.start:g.end] for g in segs[1:-1]).startswith("abcdefgh")


# -- properties ---------------------------------------------------------------------------------------

WORDS = st.sampled_from(["the", "council", "Uh,", "um,", "item", "9A", "Mr.", "Little", "motion", "carries.",
                         "Aye.", "opposed?", "resolution", "public", "hearing", "e.g.", "p.m.,", "2.41", "acres",
                         "caf\u00e9", "\u201cquoted\u201d", "--", "(note)", "next", "Yes!", "15b", "zzzzzzzzzzzzzzzz"])
SPACES = st.sampled_from([" ", " ", " ", "  ", "\t", " \u00a0"])


@st.composite
def caption_texts(draw: st.DrawFn) -> str:
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            h, m, s = draw(st.integers(0, 3)), draw(st.integers(0, 59)), draw(st.integers(0, 59))
            lines.append(f"[{h:02d}:{m:02d}:{s:02d}]")
        elif kind == 1:
            lines.append(draw(st.sampled_from(["", " ", "\t"])))
        else:
            words = draw(st.lists(WORDS, min_size=1, max_size=12))
            lines.append(" ".join(words))
    end = draw(st.sampled_from(["", "\n", "\r\n", "\n\n"]))
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines) + end


@st.composite
def one_line_texts(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 120))):
        parts.append(draw(WORDS))
        parts.append(draw(SPACES))
    if draw(st.booleans()):
        parts.append("x" * draw(st.integers(0, 600)))  # a giant word
    return "".join(parts)


BOUNDS = st.one_of(st.just((MIN_TOKENS, MAX_TOKENS)),
                   st.tuples(st.integers(0, 40), st.integers(8, 90)).filter(lambda b: b[0] <= b[1]))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=caption_texts(), bounds=BOUNDS)
def test_captions_accounting(text: str, bounds: tuple[int, int]) -> None:
    segs = segments(text, min_tokens=bounds[0], max_tokens=bounds[1])
    check_segments(text, segs, *bounds)
    # the reader hands its sentences in: the same segments as when they are found here
    assert segments(text, min_tokens=bounds[0], max_tokens=bounds[1], sentence_spans=sentences(text)) == segs


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=one_line_texts(), bounds=BOUNDS)
def test_one_line_accounting(text: str, bounds: tuple[int, int]) -> None:
    segs = segments(text, min_tokens=bounds[0], max_tokens=bounds[1])
    check_segments(text, segs, *bounds)
    for offset, ref, g in chair_announcements(text, segs):
        assert segs[g].start <= offset < segs[g].end and (not ref or ref in text)


# -- transcript_style -----------------------------------------------------------------------------


def test_style_of_captions_and_one_line() -> None:
    assert transcript_style(CAPTIONS) == speech.CAPTIONS
    assert transcript_style(WHISPER * 3) == speech.ONE_LINE
    assert transcript_style(RUN_ON * 2 + "\n") == speech.ONE_LINE


def test_style_of_other_civic_text_is_none() -> None:
    diarized = (FIXTURES / "civic_intelligence" / "testville-2026-11-24-transcript.txt").read_text()
    agenda = "\n".join(["CITY COUNCIL REGULAR MEETING", "AGENDA", "1. Call to Order", "2. Invocation",
                        "3. Pledge of Allegiance", "4. Approval of the Agenda", "5. Approval of Minutes",
                        "A. Minutes of the regular meeting of May 28, 2026", "6. Special Recognitions",
                        "7. Presentations", "8. Public Hearings", "Page 1 of 12"])
    minutes = ("The regular meeting of the City Council was called to order at 5:30 p.m. by the President. All "
               "members were present. The minutes of the previous meeting were approved as written.\n\n"
               "The Council heard a presentation on the library roof and voted 5-0 to award the contract.\n")
    wrapped = "\n".join(["The Council considered the rezoning of 2.41 acres of land lying on the west side of Old",
                         "Big Cove Road and voted to approve the request after a public hearing at which no member",
                         "of the public spoke. Council Member Kling moved to approve the ordinance and Council",
                         "Member Watkins seconded the motion. The motion carried unanimously on a roll call vote",
                         "of all the members present, and the President declared the ordinance adopted. The Council",
                         "then considered the resolution authorizing the Mayor to enter into an agreement with the",
                         "Madison County Commission for election services, and after discussion the motion carried",
                         "with one member absent. There being no further business the meeting was adjourned."])
    labelled = "\n".join(f"{who}: {said}" for who, said in [
        ("MAYOR", "We are called to order."), ("CLERK", "All present."), ("MAYOR", "Next item."),
        ("MR. LEE", "Thank you."), ("MAYOR", "Motion?"), ("MS. DIAZ", "So moved."), ("MAYOR", "Second?"),
        ("MR. LEE", "Second."), ("MAYOR", "All in favor?")])
    for text in (diarized, agenda, minutes, wrapped, labelled, "", "\n\n", "[00:00:01]\n", "Thank you."):
        assert transcript_style(text) is None, text[:60]


# -- chair announcements --------------------------------------------------------------------------


def _announced(text: str) -> list[tuple[str, str]]:
    """(the announcing sentence from its offset, ref) pairs."""
    segs = segments(text)
    return [(text[o:].split("\n")[0], ref) for o, ref, g in chair_announcements(text, segs)]


def test_announcements_in_captions() -> None:
    assert _announced(CAPTIONS) == [
        ("Uh, no matters with legal representatives,", ""),  # ", and this brings us to public hearings"
        ("Uh, 9A is a public hearing on a resolution authorizing the demolition of", "9A"),
        ("We'll begin with item 20E.", "20E"),
        ("20E is an ordinance appointing the election officials for the August 25,", "20E"),
    ]


@pytest.mark.parametrize(("sentence", "ref"), [
    ("Item 6A is a resolution recognizing the remarkable life of a great servant.", "6A"),
    ("Then the next item is 20 F, a resolution authorizing the mayor.", "20 F"),
    ("The next item on the agenda is the library roof replacement.", ""),
    ("Next on the agenda, the library roof.", ""),
    ("So we'll move on to 9B.", "9B"),
    ("That brings us to 19 unfinished business items for action.", "19"),
    ("Moving on to the consent agenda.", ""),
    ("Next is the consent calendar.", ""),
    ("Madam Clerk, please read item number 7.", "7"),
    ("The clerk will read the next item.", ""),
    ("The public hearing on item 5.1 is now open.", "5.1"),
    ("Let's turn to item A-3.", "A-3"),
    ("We will now take up agenda item number 7b.", "7b"),
    ("Item six a is resolution recognizing the life of a representative.", "six a"),
    ("21A is the introduction of an ordinance amending Chapter 2.", "21A"),
    ("We will now move on with unfinished business items for action.", ""),
])
def test_announcement_patterns(sentence: str, ref: str) -> None:
    text = f"Thank you all very much. {sentence} Is there a motion?"
    got = chair_announcements(text, segments(text))
    assert [(o, r) for o, r, _ in got] == [(text.index(sentence), ref)]


@pytest.mark.parametrize("sentence", [
    "Move to approve motion from Mr. Little.",
    "Our recommendation is that we now move to the second bidder which is the low bid.",
    "We are also deleting at the request of the sponsors item 20 O and 20 X.",
    "The difference between Residence 1B and Residence 2 is approximately 4 feet.",
    "Hearing none, we'll move on.",
    "That brings us now to the end of the evening.",
    "We'll move to approve the consent agenda.",
    "The next one is the dog park down by the river.",
])
def test_not_announcements(sentence: str) -> None:
    text = f"Thank you all very much. {sentence} Is there a motion?"
    assert chair_announcements(text, segments(text)) == []


def test_no_announcements_in_prose() -> None:
    prose = ("The library roof is 31 years old and has leaked over the reading room three times this year. The low "
             "bid from Harbor Roofing is $412,000, within the budget. Work would close the library for two weeks.")
    assert chair_announcements(prose, segments(prose)) == []
    assert chair_announcements(prose, []) == []


def test_announcements_in_a_run_on_point_at_the_words() -> None:
    segs = segments(RUN_ON, min_tokens=10, max_tokens=60)
    got = chair_announcements(RUN_ON, segs)
    assert [(RUN_ON[o:o + 19], ref) for o, ref, _ in got] == [
        ("10a is a resolution", "10a"), ("brings us to agenda", "")]
    for o, _, g in got:
        assert segs[g].start <= o < segs[g].end


# -- the real captions and transcripts --------------------------------------------------------------


def _percentiles(values: list[int]) -> list[int]:
    return [int(v) for v in np.percentile(values, [5, 25, 50, 75, 95])]


@needs_corpus(CAPTIONS_DIR, DIARIZED_DIR)
def test_huntsville_captions_and_transcripts() -> None:
    files = sorted(CAPTIONS_DIR.glob("*.txt"))
    assert len(files) == 8
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert transcript_style(text) == (speech.CAPTIONS if path.name.endswith(".captions.txt") else speech.ONE_LINE)
        segs = segments(text)
        check_segments(text, segs)
        sizes = [g.tokens for g in segs]
        p5, _, p50, _, _ = _percentiles(sizes)
        assert p5 >= 100 and p50 >= 150, (path.name, _percentiles(sizes))  # retrieval-sized, no crumbs
        announced = chair_announcements(text, segs)
        if "budget-work-session" not in path.name:  # the work session has one item and never announces it
            refs = {ref.replace(" ", "").upper() for _, ref, _ in announced}
            assert len(announced) >= 25 and {"9B", "14A", "15B"} & refs, (path.name, len(announced))
    for path in sorted(DIARIZED_DIR.glob("*.txt")):  # speaker-labelled transcripts are not this module's
        assert transcript_style(path.read_text(encoding="utf-8")) is None, path.name


@needs_corpus(CAPTIONS_DIR)
def test_the_largest_file_segments_well_under_a_second() -> None:
    path = max(CAPTIONS_DIR.glob("*.txt"), key=lambda p: p.stat().st_size)
    text = path.read_text(encoding="utf-8")
    segments(text[:2000])  # tokenizer and segmenter loaded
    start = time.perf_counter()
    segs = segments(text)
    chair_announcements(text, segs)
    assert time.perf_counter() - start < 0.5, Path(path).name
