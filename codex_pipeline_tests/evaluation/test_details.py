"""The per-question details and the explanation of ``codex eval``: texts are the files' slices, overlaps are sets.

Property tests over random gold references and hit ranges in a real file (read by the same
``read_source`` the gold loader uses), plus an exact golden rendering of one explanation.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_pipeline.evaluation.details import SourceTexts, question_dict
from codex_pipeline.evaluation.explain import TEXT_LIMIT, ExplainError, pick_question, render
from codex_pipeline.evaluation.gold import Question, Reference, read_source
from codex_pipeline.evaluation.metrics import score
from codex_pipeline.evaluation.runner import QuestionResult, ScoredHit
from codex_pipeline.retrieval import Context, Hit

TEXT = "Ünïcode first line.\r\nThe council voted 5-2 to approve the sidewalk plan.\r\n\r\nThen it adjourned.\n" * 3


def _hit(rank: int, doc: str = "urn:aprs:docs:a.md") -> Hit:
    return Hit(dataset="docs", doc_id=doc, chunk_id=f"urn:aprs:chunk:{rank:016x}", chunk_type="section", score=1.0 / rank,
               spans=((0, 1),), text="", locator="", partition_date=dt.date(2026, 11, 1),
               context=Context("", "", None, (0, 0), 0), section_id=f"s{rank}", ranks={"bm25": rank})


def _ranges(n: int) -> st.SearchStrategy[tuple[int, int]]:
    return st.tuples(st.integers(0, n - 1), st.integers(1, 40)).map(lambda t: (t[0], min(n, t[0] + t[1])))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(refs=st.lists(_ranges(len(TEXT.replace("\r\n", "\n"))), min_size=1, max_size=3),
       hits=st.lists(st.lists(_ranges(len(TEXT.replace("\r\n", "\n"))), max_size=3), max_size=4))
def test_gold_and_cited_texts_are_the_files_slices_and_overlap_is_exact(
        tmp_path: Path, refs: list[tuple[int, int]], hits: list[list[tuple[int, int]]]) -> None:
    (tmp_path / "a.md").write_bytes(TEXT.encode())
    text = read_source(tmp_path / "a.md")  # newlines normalized: gold offsets count this text
    q = Question(4, "why?", tuple(Reference("a.md", s, e) for s, e in refs))
    scored = [ScoredHit(i, _hit(i), tuple(r), {"a.md": list(r)} if r else {}) for i, r in enumerate(hits, 1)]
    retrieved = {"a.md": [r for h in hits for r in h]}
    s = score(retrieved, {"a.md": list(refs)})
    out = question_dict(7, QuestionResult(q, s, scored), SourceTexts(tmp_path))
    assert (out["number"], out["line"], out["hit"]) == (7, 4, s.hit)
    assert [g["text"] for g in out["gold"]] == [text[a:b] for a, b in refs]
    gold_chars = {c for a, b in refs for c in range(a, b)}
    for shown, ranges in zip(out["hits"], hits):
        cited_chars = {c for a, b in ranges for c in range(a, b)}
        assert all(c["text"] == text[c["start"]:c["end"]] for c in shown["cited"])
        assert {c for x in shown["cited"] for c in range(x["start"], x["end"])} == cited_chars  # merged, nothing lost
        assert shown["gold_chars_cited"] == len(cited_chars & gold_chars)
        assert shown["overlaps_gold"] is bool(cited_chars & gold_chars)
    assert out["hit"] is any(h["overlaps_gold"] for h in out["hits"])


def test_a_hit_without_a_place_in_a_file_cites_nothing_and_counts_its_characters(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("abc")
    q = Question(1, "q", (Reference("a.md", 0, 2),))
    template = ScoredHit(1, _hit(1), ((0, 10), (20, 25)), {"a.md": [(0, 2)]})
    out = question_dict(1, QuestionResult(q, score({"a.md": [(0, 2)]}, {"a.md": [(0, 2)]}), [template]), SourceTexts(tmp_path))
    (hit,) = out["hits"]
    assert hit["unmapped_chars"] == 13 and hit["cited"] == [{"source": "a.md", "start": 0, "end": 2, "text": "ab"}]
    assert hit["spans"] == [[0, 10], [20, 25]] and hit["ranks"] == {"bm25": 1}


QS = [Question(1, "How often should I prune the cache?", ()), Question(3, "How do I upgrade the tool?", ()),
      Question(4, "Who prunes the hedges?", ())]


def test_pick_question_by_number_or_by_words() -> None:
    assert [pick_question(QS, str(n)) for n in (1, 2, 3)] == [1, 2, 3]  # numbers count questions, not lines
    assert pick_question(QS, " upgrade THE tool ") == 2
    for n, q in enumerate(QS, 1):
        assert pick_question(QS, q.question) == n
    with pytest.raises(ExplainError, match=r"gold.jsonl has 3 question\(s\): give a number from 1 to 3"):
        pick_question(QS, "4", "gold.jsonl")
    with pytest.raises(ExplainError, match=r"matches 2 questions of the gold file \(1, 3\)"):
        pick_question(QS, "prune")
    with pytest.raises(ExplainError, match="no question of the gold file contains"):
        pick_question(QS, "budget")


def test_render_golden() -> None:
    exp = {"k": 5, "mode": "hybrid", "spans": "evidence", "number": 2, "line": 3, "question": "How do I upgrade?",
           "recall": 50.0, "precision": 25.0, "iou": 20.0, "hit": True,
           "gold": [{"source": "g/i.md", "start": 10, "end": 30, "text": "The self update\ncommand"}],
           "hits": [{"rank": 1, "dataset": "docs", "chunk_id": "urn:aprs:chunk:1", "section_id": "install",
                     "doc_id": "urn:aprs:docs:g/i.md", "overlaps_gold": True, "gold_chars_cited": 10,
                     "score_parts": {"fused": 0.0328, "bm25": 2.5, "bm25_rank": 1, "cosine": None, "vector_rank": None},
                     "cited": [{"source": "g/i.md", "start": 20, "end": 40, "text": "command replaces"},
                               {"source": "g/i.md", "start": 43, "end": 50, "text": "the bin"},
                               {"source": "g/i.md", "start": 59, "end": 62, "text": "ary"}],
                     "unmapped_chars": 3, "evidence_text": ["command replaces"]},
                    {"rank": 2, "dataset": "email_threads", "chunk_id": "urn:aprs:chunk:2", "section_id": "t.0",
                     "doc_id": "urn:aprs:email_threads:t", "overlaps_gold": False, "gold_chars_cited": 0,
                     "score_parts": {"fused": 0.0161, "bm25": 0.0, "bm25_rank": None, "cosine": 0.41234,
                                     "vector_rank": 2},
                     "cited": [], "unmapped_chars": 20, "evidence_text": ["Thread: upgrade", "Messages: 3"]}]}
    assert render(exp) == """\
question 2 (gold line 3): How do I upgrade?
top-5, hybrid, evidence spans: recall 50.0, precision 25.0, IoU 20.0, hit yes

gold (1 reference(s)):
  g/i.md [10:30]
    | The self update
    | command

hits (2):
  #1 docs urn:aprs:chunk:1 (section install, urn:aprs:docs:g/i.md)
     score: fused 0.0328 · bm25 2.5000 (rank 1) · cosine n/a (not in its list)
     overlaps gold: yes (10 gold characters)
     cited g/i.md [20:50] in 2 ranges (the few characters between them, e.g. quote marks, not cited):
       | command replaces
       | the bin
     cited g/i.md [59:62]:
       | ary
     3 cited characters have no place in a source file (template text)
  #2 email_threads urn:aprs:chunk:2 (section t.0, urn:aprs:email_threads:t)
     score: fused 0.0161 · bm25 0.0000 (not in its list) · cosine 0.4123 (rank 2)
     overlaps gold: no
     20 cited characters have no place in a source file (template text)
     evidence (canonical text):
       | Thread: upgrade
       | Messages: 3"""
    long = dict(exp, gold=[{"source": "g", "start": 0, "end": TEXT_LIMIT + 5, "text": "x" * (TEXT_LIMIT + 5)}], hits=[])
    assert render(long).endswith("    … (5 more characters; --json shows all)\n\nhits: none")
