"""Hybrid fusion (ranking.fuse) on hand-made candidate lists: what a row scores where a list did not place it."""

from __future__ import annotations

import dataclasses

from codex_pipeline.retrieval.ranking import fuse
from codex_pipeline.retrieval.settings import DEFAULT
from codex_pipeline.retrieval.types import SearchMode


def _scores(found: dict[str, list[tuple[float, str, int]]], want: int) -> dict[tuple[str, int], float]:
    return {(r.dataset, r.row): r.score for r in fuse(found, SearchMode.HYBRID, want, 1.0, DEFAULT)}


def test_a_row_below_the_merged_cut_keeps_its_own_bm25_score() -> None:
    # two datasets fill their 2 BM25 candidates; merged and cut to 2, b's rows fall below a's
    found = {"bm25": [(10.0, "a", 0), (9.0, "a", 1), (4.0, "b", 0), (1.0, "b", 1)],
             "vector": [(0.5, "b", 0)]}
    got = _scores(found, want=2)
    # b:0 is b's best BM25 (4 / 4 = 1.0), not b's floor (1 / 4): it was found, just cut
    assert got[("b", 0)] == DEFAULT.vector_weight * 0.5 + 1.0


def test_a_row_a_short_list_did_not_reach_scores_zero_there_and_a_full_lists_last_otherwise() -> None:
    short = {"bm25": [(3.0, "a", 0)], "vector": [(0.6, "a", 1), (0.5, "a", 0)]}
    got = _scores(short, want=2)
    assert got[("a", 1)] == DEFAULT.vector_weight * 0.6  # BM25 ran short: a:1 shares no word with the query
    assert got[("a", 0)] == 1.0 + DEFAULT.vector_weight * 0.5
    full = {"bm25": [(3.0, "a", 0), (1.5, "a", 2)], "vector": [(0.6, "a", 1), (0.5, "a", 0)]}
    got = _scores(full, want=2)
    assert got[("a", 1)] == DEFAULT.vector_weight * 0.6 + 0.5  # at most the last BM25 candidate's 1.5 / 3


def _order(found: dict[str, list[tuple[float, str, int]]], want: int) -> list[int]:
    settings = dataclasses.replace(DEFAULT, vector_weight=1.0)  # sums of dyadic scores: ties are exact
    return [r.row for r in fuse(found, SearchMode.HYBRID, want, 1.0, settings)]


def test_equal_fused_scores_are_ordered_by_both_ranks_then_the_words_never_by_row() -> None:
    # a:2 and a:7 both score 1.0; a:7 is 3rd in BM25 but 1st by vector (rank sum 4), a:2 2nd and 3rd (5)
    found = {"bm25": [(4.0, "a", 0), (3.0, "a", 2), (1.0, "a", 7)], "vector": [(0.75, "a", 7), (0.5, "a", 0), (0.25, "a", 2)]}
    assert _order(found, want=3) == [0, 7, 2]
    # three rows of 1.25 with rank sum 4 each: the question's words (BM25) decide, not the row number
    found = {"bm25": [(4.0, "a", 5), (3.0, "a", 0), (2.0, "a", 3)], "vector": [(0.75, "a", 3), (0.5, "a", 0), (0.25, "a", 5)]}
    assert _order(found, want=3) == [5, 0, 3]
