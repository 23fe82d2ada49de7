"""The vectorized redirect matcher against the row-at-a-time reference on random re-chunks.

Each example builds a partition and re-chunks it three times with random renames, edits of
every strength (so word-set scores land on both sides of 0.5 and 0.8, and tie), deletions,
inserted chunks, moved documents, recuts over unchanged text (span overlap), long documents
(windows of more than 32 chunks), duplicated texts, non-ASCII words and every kind of
whitespace; every hop's redirect table, carried rows included, must equal the reference's,
also when the matcher works in tiny batches, on one thread or several, and whichever way it
decides to prune.
"""

from __future__ import annotations

import datetime as dt
import random
from functools import partial
from unittest import mock

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.core.ids import content_hash, make_chunk_id, make_locator
from codex_pipeline.redirects import matching as redirects
from codex_pipeline.redirects.matching import INPUT_COLUMNS, compute_redirects
from codex_pipeline_tests.redirect_reference import exact_redirects

DAY = dt.date(2026, 11, 24)
WORDS = [f"w{i}" for i in range(30)] + ["Émile", "émile", "STRASSE", "straße", "ΣΟΦΙΑΣ", "σοφιας", "İstanbul",
                                        "Alpha", "alpha", "ALPHA", "naïve", "x" * 9, "y" * 17, "z\x01z", "日本語"]
SPACES = [" ", " ", " ", "\n", "\t", "\u00a0", "\u2003", "\x1c", "  ", "\r\n", "\x85"]


def _text(rng: random.Random, n: int | None = None) -> str:
    n = rng.choice([0, 1, 3, 8, 20, 40]) if n is None else n
    return "".join(rng.choice(WORDS) + rng.choice(SPACES) for _ in range(n)).strip(" ") if n else ""


def _edit(rng: random.Random, text: str) -> str:
    words = text.split()
    if not words:
        return _text(rng, 3)
    for pos in rng.sample(range(len(words)), rng.randint(0, len(words))):
        words[pos] = rng.choice(WORDS)
    if rng.random() < 0.3:
        words.append(rng.choice(WORDS))
    return rng.choice(SPACES).join(words)


Chunk = tuple[str, str, str, tuple[int, int]]  # doc, section, text, span


def _first(rng: random.Random) -> tuple[list[Chunk], dict[str, str]]:
    chunks: list[Chunk] = []
    revs = {}
    for d in range(rng.randint(1, 4)):
        doc = f"urn:aprs:docs:d{d}"
        revs[doc] = f"{rng.getrandbits(32):08x}"
        pos = 0
        for k in range(rng.choice([1, 3, 10, 80])):
            text = _text(rng) if rng.random() > 0.1 or not chunks else chunks[-1][2]  # sometimes a duplicate
            chunks.append((doc, f"s{k}", text, (pos, pos + len(text))))
            pos += len(text) + 1
    return chunks, revs


def _next(rng: random.Random, chunks: list[Chunk], revs: dict[str, str], hop: int) -> tuple[list[Chunk], dict[str, str]]:
    out: list[Chunk] = []
    new_revs = {}
    for doc in dict.fromkeys(c[0] for c in chunks):
        same_text = rng.random() < 0.3  # a recut of unchanged text: offsets stay comparable
        spaced = same_text and rng.random() < 0.3  # a whitespace-only edit: same rev8, every offset moved
        target = f"{doc}-moved{hop}" if rng.random() < 0.1 else doc
        new_revs[target] = revs[doc] if same_text else f"{rng.getrandbits(32):08x}"
        extent = max(e for d, _, _, (_, e) in chunks if d == doc)
        for _, sid, text, (s, e) in (c for c in chunks if c[0] == doc):
            roll = rng.random()
            if roll < 0.1:
                continue  # deleted
            if spaced:
                out.append((target, f"{sid}.r{hop}" if roll < 0.6 else sid, text, (s + 3, e + 3)))
                continue
            if same_text:
                cut = rng.randint(-5, 5) if e < extent else 0  # the text's end stays where it was
                out.append((target, f"{sid}.r{hop}" if roll < 0.6 else sid, text, (max(0, s + cut), e + cut)))
                continue
            new_sid = f"{sid}.h{hop}" if roll < 0.7 else sid
            new_text = text if roll < 0.3 else _edit(rng, text)
            out.append((target, new_sid, new_text, (s, s + len(new_text))))
            if rng.random() < 0.05:
                out.append((target, f"{sid}.new{hop}", _text(rng), (e, e + 5)))
    rng.shuffle(out)
    return out, new_revs


def _table(chunks: list[Chunk], revs: dict[str, str], version: str) -> pa.Table:
    cols: dict[str, list] = {c: [] for c in INPUT_COLUMNS}
    seqs: dict[str, int] = {}
    for doc, sid, text, (s, e) in chunks:
        seq = seqs[doc] = seqs.get(doc, -1) + 1
        cols["chunk_id"].append(make_chunk_id(doc, sid))
        cols["doc_id"].append(doc)
        cols["section_id"].append(sid)
        cols["seq_index"].append(seq)
        cols["evidence_anchor"].append(f'{{"page":null,"char_span":[{s},{e}]}}' if seq % 7 else
                                       f'{{"char_span": [{s}, {e}], "page": null}}')  # the JSON fallback too
        cols["chunking_version"].append(version)
        cols["locator"].append(make_locator(doc.rsplit(":", 1)[1], revs[doc], sid, None, seq))
        cols["content_hash"].append(content_hash(text))
        cols["chunk_text"].append(text)
    return pa.table(cols)


def _three_hops_match_the_reference(seed: int, threads: int | None = None) -> None:
    rng = random.Random(seed)
    chunks, revs = _first(rng)
    previous, stored = _table(chunks, revs, "1"), None
    for hop in range(1, 4):
        chunks, revs = _next(rng, chunks, revs, hop)
        current = _table(chunks, revs, str(hop + 1))
        fast, exact = (
            matcher(previous, current, dataset="docs", partition_date=DAY, chunking_version=str(hop + 1),
                    previous_redirects=stored, now=dt.datetime(2026, 11, 24, hop, tzinfo=dt.UTC))
            for matcher in (partial(compute_redirects, threads=threads), exact_redirects)
        )
        assert fast.to_pylist() == exact.to_pylist()
        assert fast.equals(exact)
        previous, stored = current, fast


# 20 examples of three hops each; test_the_random_rechunks_reach_every_kind_of_match shows the generator
# reaches every match kind, and the tiny-batch test below draws 4 x 8 more
@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32))
def test_random_rechunks_match_the_reference(seed: int) -> None:
    _three_hops_match_the_reference(seed)


@pytest.mark.parametrize(("probe", "threads"), [(0, 1), (10**9, 1), (0, 3), (10**9, 3)],
                         ids=["always-prune", "never-prune-at-place", "always-prune-3-threads",
                              "never-prune-at-place-3-threads"])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_tiny_batches_and_either_pruning_choice_match_the_reference(probe: int, threads: int, seed: int) -> None:
    """Batches of three vanished rows (windows straddle them, candidates are hashed twice), a few
    candidate pairs at a time, the batches on one thread or three, and the at-place pairs pruned
    always or never: the same table."""
    with mock.patch.multiple(redirects, _ROWS_PER_BATCH=3, _PAIRS_PER_BATCH=5, _PROBE=probe):
        _three_hops_match_the_reference(seed, threads)


def test_the_random_rechunks_reach_every_kind_of_match() -> None:
    """The generator above is only a test if it produces each match kind (and scores near the thresholds)."""
    kinds: set[str] = set()
    scores: list[float] = []
    for seed in range(40):
        rng = random.Random(seed)
        chunks, revs = _first(rng)
        nxt, nrevs = _next(rng, chunks, revs, 1)
        out = compute_redirects(_table(chunks, revs, "1"), _table(nxt, nrevs, "2"), dataset="docs",
                                partition_date=DAY, chunking_version="2")
        kinds |= set(out.column("match").to_pylist())
        scores += [r["overlap"] for r in out.to_pylist() if r["match"] == "similar_text"]
    assert kinds == {"content_hash", "span_overlap", "similar_text", "removed"}
    assert any(0.5 <= s < 0.6 for s in scores) and any(0.8 <= s < 0.9 for s in scores)


def test_the_default_thread_count_is_bounded() -> None:
    assert 1 <= redirects.default_threads() <= 4
