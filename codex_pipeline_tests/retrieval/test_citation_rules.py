"""Citation rules (issue 26): a hit cites the words that answer, never metadata lines, and every cited span
is exact ``canonical_text[start:end]`` even when a hit cites several."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from codex_pipeline.retrieval.citation import citable, metadata_line
from codex_pipeline.retrieval.hits import cite_units
from codex_pipeline.retrieval.query import AnalyzedQuery
from codex_pipeline.retrieval.types import Context, Hit
from codex_pipeline.retrieval.units import UnitVectors, best_units
from codex_pipeline_tests.fakes import FakeEmbedder

HEADER = "Start:", "End:", "Duration:", "Text:", "-----", "Commissioner Moores:"

TURNS = (
    "Commissioner Moores:\nStart: 00:01:00.000\nEnd: 00:01:09.000\nDuration: 9.000 seconds\n"
    "Text: The foundation donated a van for the summer camp programs.\n"
    "--------------------------------------------------\n"
    "Commissioner Moores:\nStart: 00:01:09.000\nEnd: 00:01:15.000\nDuration: 6.000 seconds\n"
    "Text: We also thank the volunteers who cleaned the park."
)

THREAD = (
    "Message 6 (reply to message 5, Victor Stinner)\n"
    "From: Terry Reedy <tjreedy@udel.edu>\n"
    "Date: 2017-06-20 12:11 -0400\n"
    "Subject: Backport labels\n\n"
    "On Tue, 20 Jun 2017 at 08:37 Victor Stinner <victor.stinner at gmail.com>\n"
    "wrote:\n"
    "[quoting messages 5, 4: 6 lines]\n\n"
    "Backports to older versions are more likely to have merge conflicts.\n"
    "They need manual intervention or even pre-commit testing anyway."
)


def _text_spans(text: str) -> list[tuple[int, int]]:
    out, at = [], 0
    while (k := text.find("Text: ", at)) != -1:
        end = text.find("\n", k)
        end = len(text) if end == -1 else end
        out.append((k + 6, end))
        at = end
    return out


def _embed(texts: list[str]) -> np.ndarray:
    return FakeEmbedder().embed(texts).vectors


def _query(text: str) -> AnalyzedQuery:
    return AnalyzedQuery.of(text, _embed([text])[0])


def test_metadata_lines_are_recognized_and_words_are_not() -> None:
    for line in ["Start: 00:01:00.000", "Duration: 9.000 seconds", "From: Terry Reedy <tjreedy@udel.edu>",
                 "Sent: Tuesday, June 20, 2017", "To: python-committers@python.org",
                 "Message 6 (reply to message 5, Victor Stinner)", "[quoting messages 5, 4: 6 lines]",
                 "On Tue, 20 Jun 2017 at 08:37 Victor Stinner <victor.stinner at gmail.com>", "wrote:",
                 "2017-06-20 16:56 GMT+02:00 Mariatta Wijaya <mariatta.wijaya at gmail.com>:", "-----------",
                 "[00:12:33]", "Mayor Linda Morse:", "Commissioner Moores:", "SPEAKER_01:", "> quoted reply line",
                 "> *From:* Clearwater [mailto:clearwater-bounces]", "*Sent:* Tuesday, December 27, 2016"]:
        assert metadata_line(line), line
    for line in ["Note: uv caches wheels.", "The cache: where it lives", "They need manual intervention.",
                 "Start the server with uvicorn.", "The commission voted on three items:", "x > y holds"]:
        assert not metadata_line(line), line


def test_a_cited_turn_starts_after_its_text_label() -> None:
    """The words spoken, as the independent gold cites them: never the ``Text:`` label before them."""
    spans = _text_spans(TURNS)
    whole = [(TURNS.rfind("\n", 0, a) + 1, b) for a, b in spans]  # each turn's Text: line, label included
    assert [TURNS[a:b].startswith("Text: ") for a, b in whole] == [True, True]
    assert citable(TURNS, whole) == spans
    inside = [(spans[0][0] + 4, spans[0][1])]  # a piece starting mid-line is not moved
    assert citable(TURNS, inside) == inside


def test_a_merged_run_of_turns_cites_one_span_per_turn_never_its_header_lines() -> None:
    spans = _text_spans(TURNS)
    meta = {"speaker": "Commissioner Moores", "merged": True, "turns": [3, 4]}
    (unit, _), = best_units([(TURNS, spans, meta)], _query("who donated a van"), UnitVectors(_embed))
    assert unit == tuple(spans)  # the old rule cited one stretch from the first turn's words to the last's
    for s, e in unit:
        assert not any(h in TURNS[s:e] for h in HEADER)


def test_an_email_hit_cites_the_reply_not_its_header_or_the_quote_placeholder() -> None:
    chunk = [(0, len(THREAD))]
    (unit, _), = best_units([(THREAD, chunk, {"subject": "Backport labels"})],
                            _query("why are backports to old versions risky"), UnitVectors(_embed))
    cited = "".join(THREAD[s:e] for s, e in unit)
    assert "merge conflicts" in cited and "pre-commit testing" in cited
    for marker in ("From:", "Date:", "Subject:", "Message 6", "[quoting", "wrote:", "Victor Stinner <"):
        assert marker not in cited, marker
    assert [THREAD[s:e] for s, e in unit] == [
        "Backports to older versions are more likely to have merge conflicts.\n"
        "They need manual intervention or even pre-commit testing anyway."
    ]


def test_a_sentence_piece_of_a_header_line_is_never_cited() -> None:
    # a sentence splitter cuts the header after the initials; the name part alone looks like words
    text = "Message 30 (reply to message 28)\nFrom: M.-A. Lemburg <mal@egenix.com>\nI do not understand the fuss."
    start = text.index("From:")
    cut = text.index("Lemburg")
    end = text.index(">") + 1
    body = (text.index("I do"), len(text))
    assert citable(text, [(start, cut - 1), (cut, end), body]) == [body]
    assert citable(text, [body]) == [body]


def test_citable_keeps_everything_when_every_piece_is_metadata() -> None:
    text = "From: a@b.c\nDate: today"
    pieces = [(0, 11), (12, len(text))]
    assert citable(text, pieces) == pieces  # cite something rather than nothing


class _OneDocIndex:
    """The two reads ``cite_units`` makes of a search index, over one document (no stored unit vectors)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def row(self, row: int) -> dict[str, int]:
        return {"doc_row": 0}

    def canonical_text(self, doc_row: int) -> str:
        return self.text

    def stored_units(self, row: int) -> None:
        return None


def test_a_hit_citing_several_turns_carries_each_span_and_its_exact_text() -> None:
    spans = tuple(_text_spans(TURNS))
    hit = Hit(dataset="civic_intelligence", doc_id="d", chunk_id="c", chunk_type="speaker_turn", score=1.0,
              spans=spans, text=" ".join(TURNS[s:e] for s, e in spans), locator="", partition_date=dt.date(2026, 1, 1),
              context=Context("", "", None, (0, len(TURNS)), 0),
              metadata={"speaker": "Commissioner Moores", "merged": True, "turns": [3, 4]})
    index: Any = _OneDocIndex(TURNS)
    (cited,) = cite_units([hit], [index], [0], _query("who donated a van"), UnitVectors(_embed))
    assert len(cited.evidence) == 2
    assert cited.evidence_text == tuple(TURNS[s:e] for s, e in cited.evidence)
    assert cited.evidence_text == ("The foundation donated a van for the summer camp programs.",
                                   "We also thank the volunteers who cleaned the park.")
