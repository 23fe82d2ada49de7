"""A pasted sentence or a quoted phrase finds the rows that hold it word for word first (issue 45, item 5).

BM25 sums words: a row repeating a phrase's rarer words outranks the one row that holds the phrase
itself. Vectors come from the deterministic fake embedder: what is tested is the ranking rule.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.retrieval import Retriever, bm25
from codex_pipeline.retrieval.lexical import phrase_terms
from codex_pipeline.retrieval.settings import DEFAULT
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.fakes import FakeEmbedder
from codex_pipeline_tests.retrieval.test_freshness import land_day

DAY = dt.date(2026, 11, 5)
SENTENCE = "Inspectors replace two bearings under the quokka underpass before the March reopening"
FILES = {
    "repeats.txt": "Quokka underpass bearings reopening: inspectors replace quokka underpass bearings. " * 3,
    "holds.txt": (f"Council notes of the works committee, with the ferry timetable, the library hours, the budget "
                  f"for parks, harbour dredging and a long list of road repairs across the county. {SENTENCE}. "
                  "The ferry timetable is unchanged; the library opens at nine; parks keep their summer hours."),
    "elm.txt": "Street trees on Elm are pruned each spring; the street closes on Elm for a day.",
    "elm-street.txt": "The Elm Street bridge is closed.",
}


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory) -> Retriever:
    wh = Warehouse(Path(tmp_path_factory.mktemp("phrase")) / "data")
    embedder = FakeEmbedder()
    land_day(wh, embedder, DAY, FILES)
    return Retriever(wh.root, embedder=embedder)


@pytest.mark.parametrize("mode", ["hybrid", "bm25"])
def test_a_pasted_sentence_finds_the_row_holding_it(retriever: Retriever, mode: str) -> None:
    hits = retriever.search(SENTENCE, k=3, mode=mode)
    assert "quokka underpass before the March reopening" in hits[0].text
    assert hits[0].ranks.get("phrase") == 1
    # without the rule (a phrase needs more words than any query has) the row of repeated words wins
    plain = retriever.with_settings(dataclasses.replace(DEFAULT, phrase_min_terms=1000))
    assert "quokka underpass before" not in plain.search(SENTENCE, k=3, mode=mode)[0].text


def test_a_quoted_phrase_of_two_words_ranks_the_rows_holding_it_first(retriever: Retriever) -> None:
    assert "Elm Street bridge" in retriever.search('"Elm Street" closed', k=3)[0].text
    # unquoted, three words are no phrase: the rule leaves the ranking alone
    plain = retriever.with_settings(dataclasses.replace(DEFAULT, phrase_min_terms=1000))
    assert [h.chunk_id for h in retriever.search("Elm street closed", k=3)] == \
        [h.chunk_id for h in plain.search("Elm street closed", k=3)]


def test_vector_search_ignores_phrases(retriever: Retriever) -> None:
    assert all("phrase" not in h.ranks for h in retriever.search(SENTENCE, k=3, mode="vector"))


def test_phrase_terms_are_the_indexed_words_in_order() -> None:
    assert phrase_terms('where is "the Elm Street bridge"?', 6) == ("elm", "street", "bridg")
    assert phrase_terms("\u201cElm Street\u201d", 6) == ("elm", "street")
    assert phrase_terms("elm street closed", 6) == ()  # too short to be a pasted sentence
    assert phrase_terms('"the"', 2) == ()  # a quoted stopword is no phrase
    assert len(phrase_terms(SENTENCE, 6)) >= 6


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 5), max_size=12), min_size=1, max_size=25), st.lists(st.integers(0, 6), min_size=1, max_size=4))
def test_rows_holding_a_phrase_are_exactly_those_with_its_words_side_by_side(rows: list[list[int]], phrase: list[int]) -> None:
    """Against a plain scan: row boundaries never join two rows' words into one run; word 6 is held by no row."""
    vocabulary = [f"w{i}" for i in range(6)]
    table = bm25.TermTable.build(((i, [vocabulary[t] for t in r]) for i, r in enumerate(rows)), len(rows))
    with tempfile.TemporaryDirectory() as folder:
        bm25.save(Path(folder), table, bm25.score_matrix(table))
        got = bm25.Bm25(Path(folder)).rows_holding([f"w{t}" for t in phrase]).tolist()
    n = len(phrase)
    assert got == [i for i, r in enumerate(rows) if any(r[at:at + n] == phrase for at in range(len(r) - n + 1))]
