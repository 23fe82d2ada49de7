"""`codex eval --json --details` and `--explain` (issue 39 item 5): a failing question read from the output alone.

One real Dagster materialization of the tiny Markdown corpus of ``test_eval_errors`` (fake
embedder for the vectors), then re-scored with ``--no-materialize``: the details keep the
summary keys of plain ``--json``, each gold reference's text is its source file's slice and
each hit's cited text the slice of the file range it maps to; ``--explain`` names the gold
and hit texts, and its score parts agree with the ranking that produced the hit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codex_pipeline.retrieval.ranking import lexical_weight
from codex_pipeline.retrieval.settings import DEFAULT
from codex_pipeline_tests.cli.test_eval_errors import PAGES, QUESTIONS, _corpus, _eval


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(corpus, gold, work dir) with the corpus materialized as ``docs``, its propositions too (one run for all)."""
    root = tmp_path_factory.mktemp("explain")
    corpus, gold = _corpus(root)
    rc, out, err = _eval(str(gold), "--corpus", str(corpus), "--dataset", "docs", "--work-dir", str(root / "work"),
                         "--units", "propositions")
    assert rc == 0, err
    return corpus, gold, root / "work"


def _rescore(work: tuple[Path, Path, Path], *argv: str) -> tuple[int, str, str]:
    corpus, gold, data = work
    return _eval(str(gold), "--corpus", str(corpus), "--dataset", "docs", "--work-dir", str(data), "--no-materialize",
                 *argv)


def test_details_keep_the_summary_and_carry_gold_and_cited_texts(work: tuple[Path, Path, Path]) -> None:
    rc, plain, err = _rescore(work, "--json")
    assert rc == 0, err
    rc, out, err = _rescore(work, "--json", "--details")
    assert rc == 0, err
    summary, report = json.loads(plain), json.loads(out)
    assert {k: report[k] for k in summary} == summary  # the same summary keys and values as plain --json
    assert report["questions"] == len(QUESTIONS) == len(report["details"])
    for n, (detail, (question, source, words)) in enumerate(zip(report["details"], QUESTIONS), 1):
        assert (detail["number"], detail["question"]) == (n, question)
        (gold,) = detail["gold"]
        assert gold["source"] == source and gold["text"] == words == PAGES[source][gold["start"]:gold["end"]]
        assert [h["rank"] for h in detail["hits"]] == list(range(1, len(detail["hits"]) + 1))
        for hit in detail["hits"]:
            assert hit["dataset"] == "docs" and hit["chunk_id"].startswith("urn:aprs:chunk:")
            assert hit["doc_id"].startswith("urn:aprs:docs:") and isinstance(hit["score"], float)
            assert hit["cited"], hit  # Markdown maps to its file one to one
            for c in hit["cited"]:
                assert c["text"] == PAGES[c["source"]][c["start"]:c["end"]] and c["text"]
            inside = any(c["source"] == source and c["start"] < gold["end"] and gold["start"] < c["end"]
                         for c in hit["cited"])
            assert hit["overlaps_gold"] is inside is (hit["gold_chars_cited"] > 0)
        assert detail["hit"] is any(h["overlaps_gold"] for h in detail["hits"])
    assert report["hit_at_k"] == pytest.approx(100 * sum(d["hit"] for d in report["details"]) / len(QUESTIONS))


def test_explain_names_the_gold_and_every_hit_text(work: tuple[Path, Path, Path]) -> None:
    rc, out, err = _rescore(work, "--explain", "2")
    assert rc == 0, err
    rc, as_json, err = _rescore(work, "--explain", "2", "--json")
    assert rc == 0, err
    exp = json.loads(as_json)
    question, source, words = QUESTIONS[1]
    assert f"\nquestion 2 (gold line 2): {question}\n" in out
    assert f"  {source} [{exp['gold'][0]['start']}:{exp['gold'][0]['end']}]\n    | {words}\n" in out
    assert exp["hits"]
    for hit in exp["hits"]:
        assert f"  #{hit['rank']} docs {hit['chunk_id']} " in out
        for c in hit["cited"]:
            for line in c["text"].split("\n"):
                assert f"       | {line}\n" in out + "\n"
        assert f"fused {hit['score']:.4f}" in out
    assert "codex eval: 1 questions in" in out  # only the one question was asked


def test_explain_by_words_picks_the_same_question(work: tuple[Path, Path, Path]) -> None:
    rc, by_words, err = _rescore(work, "--explain", "PRUNE the cache", "--json")
    assert rc == 0, err
    rc, by_number, err = _rescore(work, "--explain", "1", "--json")
    assert rc == 0, err
    assert json.loads(by_words) == json.loads(by_number)
    assert json.loads(by_number)["question"] == QUESTIONS[0][0]


@pytest.mark.parametrize("mode, own", [("bm25", "bm25"), ("vector", "cosine")])
def test_score_parts_agree_with_the_ranking(work: tuple[Path, Path, Path], mode: str, own: str) -> None:
    """In a one-list mode the hit's score is that list's score: the raw part re-read from the index must equal it."""
    rc, out, err = _rescore(work, "--explain", "1", "--json", "--mode", mode)
    assert rc == 0, err
    hits = json.loads(out)["hits"]
    assert hits
    rank_key = "bm25_rank" if own == "bm25" else "vector_rank"
    for hit in hits:
        parts = hit["score_parts"]
        assert parts[own] == pytest.approx(hit["score"], abs=1e-3)
        assert parts[rank_key] == hit["rank"]
        if mode == "bm25":
            assert parts["cosine"] is None  # no query embedder in a BM25 eval
        else:
            assert parts["bm25"] is not None and parts["bm25_rank"] is None


def test_hybrid_score_parts_carry_each_lists_rank(work: tuple[Path, Path, Path]) -> None:
    rc, out, err = _rescore(work, "--explain", "1", "--json")
    assert rc == 0, err
    hits = json.loads(out)["hits"]
    assert hits
    for hit in hits:
        parts = hit["score_parts"]
        assert parts["fused"] == hit["score"]
        assert (parts["bm25_rank"], parts["vector_rank"]) == (hit["ranks"].get("bm25"), hit["ranks"].get("vector"))
        assert parts["cosine"] is not None and parts["bm25"] is not None
        if parts["bm25_rank"] is not None:
            assert parts["bm25"] > 0


@pytest.mark.parametrize("selector, words", [("3", "has 2 question(s): give a number from 1 to 2"),
                                             ("0", "give a number from 1 to 2"),
                                             ("the", "matches 2 questions of"),
                                             ("zebra", "no question of")])
def test_explain_that_names_no_single_question_is_one_line(tmp_path: Path, selector: str, words: str) -> None:
    corpus, gold = _corpus(tmp_path)  # refused before anything is landed or materialized
    rc, out, err = _eval(str(gold), "--corpus", str(corpus), "--dataset", "docs", "--explain", selector)
    assert rc == 2 and out == "", (out, err)
    assert err.count("\n") == 1 and err.startswith("codex eval: --explain ") and words in err, err
    assert str(gold) in err  # names the file the numbers and words refer to


def test_explain_propositions_reads_the_parts_from_the_proposition_collection(work: tuple[Path, Path, Path]) -> None:
    rc, out, err = _rescore(work, "--units", "propositions", "--mode", "bm25", "--explain", "1", "--json")
    assert rc == 0, err
    exp = json.loads(out)
    assert exp["hits"] and exp["gold"][0]["text"] == QUESTIONS[0][2]
    for hit in exp["hits"]:
        assert hit["score_parts"]["bm25"] == pytest.approx(hit["score"], abs=1e-3)
        assert hit["evidence_text"] and all(c["text"] for c in hit["cited"])


def test_hybrid_score_is_the_weighted_sum_of_its_parts(work: tuple[Path, Path, Path]) -> None:
    """Hybrid: fused = w x BM25 over the best BM25 of the dataset + vector weight x cosine (ranking.fuse), one
    BM25 weight w for the query, between its lexical weight and that times 1 + coverage_boost (ranking.rank), for
    every hit both lists found, the best BM25 being the BM25 list's first hit."""
    rc, out, err = _rescore(work, "--explain", "1", "--json")
    assert rc == 0, err
    hits = json.loads(out)["hits"]
    best = [h["score_parts"]["bm25"] for h in hits if h["score_parts"]["bm25_rank"] == 1]
    both = [h for h in hits if h["score_parts"]["bm25_rank"] and h["score_parts"]["vector_rank"]]
    assert best and both
    weights = []
    for hit in both:
        parts = hit["score_parts"]
        weights.append((hit["score"] - DEFAULT.vector_weight * parts["cosine"]) * best[0] / parts["bm25"])
    low = lexical_weight(QUESTIONS[0][0], DEFAULT)
    assert low - 1e-3 <= weights[0] <= low * (1 + DEFAULT.coverage_boost) + 1e-3
    assert weights == pytest.approx([weights[0]] * len(weights), abs=1e-2)  # one weight for the query
