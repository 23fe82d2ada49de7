"""Evidence units: what is embedded for a unit, and how the best unit of a hit is chosen."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest

from codex_pipeline.retrieval.query import AnalyzedQuery
from codex_pipeline.retrieval.settings import DEFAULT
from codex_pipeline.retrieval.units import (
    UnitVectors,
    best_units,
    chunk_units,
    cite,
    lexical_shares,
    unit_key,
    unit_pieces,
)

TURNS = (
    "Commissioner Moores:\nStart: 00:01:00.000\nEnd: 00:01:09.000\nDuration: 9.000 seconds\n"
    "Text: The foundation donated a van for the summer camp programs.\n"
    "--------------------------------------------------\n"
    "Commissioner Moores:\nStart: 00:01:09.000\nEnd: 00:01:15.000\nDuration: 6.000 seconds\n"
    "Text: We also thank the volunteers who cleaned the park."
)



COSINE = dataclasses.replace(DEFAULT, unit_vector_weight=1.0)
"""Unit scores with the cosine in them (the default leaves it out: RetrievalSettings.unit_vector_weight): the rules
below are about how cosines widen and cut citations when a deployment weighs them."""

def _spans(text: str) -> list[tuple[int, int]]:
    out, at = [], 0
    while (k := text.find("Text: ", at)) != -1:
        end = text.find("\n", k)
        end = len(text) if end == -1 else end
        out.append((k + 6, end))
        at = end
    return out


class Recorder:
    """A deterministic stand-in embedder that records every text it is asked to embed."""

    def __init__(self, same: bool = False) -> None:
        self.seen: list[str] = []
        self.same = same  # every text gets one vector: cosine cannot tell units apart

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        rows = []
        for t in texts:
            seed = 0 if self.same else int(hashlib.sha256(t.encode()).hexdigest()[:8], 16)
            rows.append(np.random.default_rng(seed).standard_normal(16))
        return np.asarray(rows, np.float32)


def test_a_unit_is_embedded_without_the_markup_between_its_sentences_and_cited_without_it() -> None:
    spans = _spans(TURNS)
    meta = {"speaker": "Commissioner Moores"}
    assert chunk_units(TURNS, spans, meta).texts == [
        "Commissioner Moores: The foundation donated a van for the summer camp programs. "
        "We also thank the volunteers who cleaned the park."
    ]
    rec = Recorder()
    (unit, _), = best_units([(TURNS, spans, meta)], AnalyzedQuery.of("", np.ones(16, np.float32)), UnitVectors(rec))
    assert rec.seen == []  # one unit: it is the evidence, nothing to embed
    assert unit == tuple(spans)  # one span per turn: the second turn's header lines are never cited (issue 26)


def _long_text() -> str:
    return " ".join(
        [f"The council discussed the budget for item {i} at length and moved on." for i in range(12)]
        + ["The Flint Hills foundation gave twenty thousand dollars for a van."]
        + [f"The council discussed the parks schedule {i} and moved on." for i in range(12)]
    )


def test_stored_unit_vectors_are_used_when_their_keys_match_and_embedded_otherwise() -> None:
    text = _long_text()
    units = chunk_units(text, [(0, len(text))], None)
    assert units.embedded and len(units.texts) > 1
    answer = next(i for i, t in enumerate(units.texts) if "Flint Hills" in t)
    q = np.zeros(16, np.float32)
    q[0] = 1.0
    vecs = np.eye(16, dtype=np.float32)[[0 if i == answer else 1 for i in range(len(units.texts))]]
    keys = np.array([unit_key(t) for t in units.texts], np.uint64)
    rec = Recorder()
    (unit, score), = best_units([(text, [(0, len(text))], None)], AnalyzedQuery.of("", q), UnitVectors(rec), stored=[(keys, vecs)], settings=COSINE)
    assert rec.seen == []  # every vector came from the store
    start = text.index("The Flint Hills")
    assert any(s <= start < e for s, e in unit) and score == 1.0
    stale = keys.copy()
    stale[0] += np.uint64(1)  # made from another text: not trusted
    best_units([(text, [(0, len(text))], None)], AnalyzedQuery.of("", q), UnitVectors(rec), stored=[(stale, vecs)], settings=COSINE)
    assert rec.seen == units.texts


def test_the_unit_naming_the_rare_query_words_wins_when_cosines_tie() -> None:
    text = _long_text()
    pieces = unit_pieces(text, [(0, len(text))], budget=40)
    assert len(pieces) > 2
    query = "How much did the Flint Hills foundation give the council?"
    cands: list = [(text, [(0, len(text))], None)]
    q = np.ones(16, np.float32)
    # neighbour_ranks=0: the unit chosen, without the neighbour a top hit may add
    by_cosine_only = dataclasses.replace(DEFAULT, lexical_weight=0.0, neighbour_ranks=0)
    (by_cosine, _), = best_units(cands, AnalyzedQuery.of(query, q), UnitVectors(Recorder(same=True)), settings=by_cosine_only)
    (hybrid, _), = best_units(cands, AnalyzedQuery.of(query, q), UnitVectors(Recorder(same=True)),
                              settings=dataclasses.replace(DEFAULT, neighbour_ranks=0))
    answer = text.index("The Flint Hills")
    assert not any(s <= answer < e for s, e in by_cosine)  # a tie goes to the first unit
    assert any(s <= answer < e for s, e in hybrid)


def test_lexical_shares_weigh_a_word_every_unit_holds_least() -> None:
    texts = ["council budget van", "council budget", "council parks"]
    shares = lexical_shares("council van", texts)
    assert shares[0] > shares[1] == shares[2] > 0.0
    assert lexical_shares("", texts) == [0.0, 0.0, 0.0]
    assert lexical_shares("zebra", texts) == [0.0, 0.0, 0.0]


def test_cite_joins_only_whitespace_gaps() -> None:
    spans = _spans(TURNS)
    assert cite(TURNS, spans) == tuple(spans)


def _unit_vector(cos: float) -> np.ndarray:
    v = np.zeros(16, np.float32)
    v[0], v[1] = cos, np.sqrt(1.0 - cos * cos)
    return v


def test_a_top_hit_cites_the_neighbour_unit_that_scores_almost_as_well() -> None:
    widening = dataclasses.replace(COSINE, tail_sentences=0)  # widening alone: the third hit cites its whole best unit
    text = _long_text()
    units = chunk_units(text, [(0, len(text))], None)
    assert len(units.texts) >= 3
    keys = np.array([unit_key(t) for t in units.texts], np.uint64)
    q = _unit_vector(1.0)
    best = 1
    cosines = [0.2] * len(units.texts)
    cosines[best], cosines[best + 1] = 1.0, 0.9  # the next unit completes the answer
    vecs = np.stack([_unit_vector(c) for c in cosines])
    cand = (text, [(0, len(text))], None)
    rec = Recorder()
    got = best_units([cand] * 3, AnalyzedQuery.of("", q), UnitVectors(rec), stored=[(keys, vecs)] * 3,
                     settings=dataclasses.replace(widening, neighbour_ranks=2))
    assert rec.seen == []
    two = cite(text, units.pieces[best] + units.pieces[best + 1])
    one = cite(text, units.pieces[best])
    assert [unit for unit, _ in got] == [two, two, one]  # only the top two hits widen
    assert [score for _, score in got] == pytest.approx([1.0, 1.0, 1.0])  # the score stays the best unit's
    cosines[best + 1] = 0.5  # a neighbour well below the best stays out
    vecs = np.stack([_unit_vector(c) for c in cosines])
    (unit, _), = best_units([cand], AnalyzedQuery.of("", q), UnitVectors(rec), stored=[(keys, vecs)], settings=widening)
    assert unit == one


def test_a_second_top_hit_widens_only_when_its_best_unit_rivals_the_best_of_all() -> None:
    text = _long_text()
    units = chunk_units(text, [(0, len(text))], None)
    keys = np.array([unit_key(t) for t in units.texts], np.uint64)
    cand = (text, [(0, len(text))], None)
    best = 1

    def vectors(top: float) -> np.ndarray:
        cosines = [0.2] * len(units.texts)
        cosines[best], cosines[best + 1] = top, top - 0.02  # the next unit is a near tie: widening takes it
        return np.stack([_unit_vector(c) for c in cosines])

    def cited(first: float, second: float, widen_top_margin: float = 0.05) -> list[tuple[tuple[int, int], ...]]:
        got = best_units([cand] * 2, AnalyzedQuery.of("", _unit_vector(1.0)), UnitVectors(Recorder()),
                         stored=[(keys, vectors(first)), (keys, vectors(second))],
                         settings=dataclasses.replace(COSINE, neighbour_ranks=2, widen_top_margin=widen_top_margin))
        return [unit for unit, _ in got]

    two = cite(text, units.pieces[best] + units.pieces[best + 1])
    one = cite(text, units.pieces[best])
    assert cited(1.0, 0.97) == [two, two]  # within the margin of the best unit of all: both widen
    assert cited(1.0, 0.6) == [two, one]  # far below it: the second hit cites its best unit alone
    assert cited(0.6, 1.0) == [two, two]  # the first hit widens whatever it scores
    assert cited(1.0, 0.6, widen_top_margin=float("inf")) == [two, two]  # the rule before session 7


def test_without_a_query_vector_the_unit_holding_the_query_words_is_cited_and_nothing_embeds() -> None:
    """BM25 search: units scored by the query's words alone. Equal scores go to the higher hit, so lower hits
    holding the same words still cite one sentence."""
    text = _long_text()
    units = chunk_units(text, [(0, len(text))], None)
    answer = next(i for i, t in enumerate(units.texts) if "Flint Hills" in t)
    rec = Recorder()
    got = best_units([(text, [(0, len(text))], None)] * 5, AnalyzedQuery.of("Flint Hills van"), UnitVectors(rec),
                     settings=dataclasses.replace(DEFAULT, neighbour_ranks=3))
    assert rec.seen == [] and all(score > 0 for _, score in got)
    whole = cite(text, units.pieces[answer])
    assert all(any(s <= a and b <= e for a, b in unit) for s, e in whole for unit, _ in got[:3])  # its unit, whole
    sentence = text.index("The Flint Hills"), text.index("van.") + len("van.")
    assert [unit for unit, _ in got[3:]] == [(sentence,), (sentence,)]  # tied with the best: still a sentence


def test_a_lower_hit_cites_its_sentence_holding_the_query_words_unless_it_holds_the_best_unit_of_all() -> None:
    text = _long_text()
    units = chunk_units(text, [(0, len(text))], None)
    keys = np.array([unit_key(t) for t in units.texts], np.uint64)
    answer = next(i for i, t in enumerate(units.texts) if "Flint Hills" in t)
    q = _unit_vector(1.0)
    cand = (text, [(0, len(text))], None)
    query = AnalyzedQuery.of("Flint Hills van", q)

    def cited(cosines_of_third: float) -> list[tuple[tuple[int, int], ...]]:
        strong = np.stack([_unit_vector(0.9 if j == answer else 0.2) for j in range(len(units.texts))])
        third = np.stack([_unit_vector(cosines_of_third if j == answer else 0.1) for j in range(len(units.texts))])
        got = best_units([cand] * 3, query, UnitVectors(Recorder()), stored=[(keys, strong)] * 2 + [(keys, third)],
                         settings=dataclasses.replace(COSINE, neighbour_ranks=2))
        return [unit for unit, _ in got]

    assert DEFAULT.tail_sentences == 1
    weak = cited(0.5)
    sentence = text.index("The Flint Hills"), text.index("van.") + len("van.")
    assert weak[2] == (sentence,)  # the one sentence naming the query's words, exact in the text
    assert all(s <= sentence[0] and sentence[1] <= e for s, e in weak[0])  # a top hit cites its whole unit
    assert sum(e - s for s, e in weak[0]) > 3 * (sentence[1] - sentence[0])
    best = cited(0.99)  # the third hit holds the best unit of all: cited whole wherever it ranks
    assert best[2] == cite(text, units.pieces[answer]) and len(units.pieces[answer]) > 1
