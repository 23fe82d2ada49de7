"""Vectorized word sets: the same Jaccard as Python's ``frozenset(text.lower().split())``."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from codex_pipeline.redirects import wordsets

PIECES = ["a", "B", "c", "É", "é", "ß", "İ", "ǅ", "x" * 9, "Y" * 17, "z" * 40, "ΣΑΣ", "\x00", "\x01", "\x1b", "\x7f",
          "日本", "naïve", "Straße", "\u00a0", "\u2003", "\u3000", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c",
          "\x1f", "\x85", "\u2028", "  ", "q"]


def _texts(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(PIECES) for _ in range(rng.choice([0, 1, 4, 30, 90]))) for _ in range(n)]


def _jaccard(a: str, b: str) -> float:
    x, y = frozenset(a.lower().split()), frozenset(b.lower().split())
    inter = len(x & y)
    return inter / (len(x) + len(y) - inter) if x or y else 0.0


def test_jaccard_equals_python_word_sets() -> None:
    rng = random.Random(7)
    left, right = _texts(rng, 600), _texts(rng, 500)
    right[:100] = [t.upper() if k % 2 else t.replace(" ", "\t") for k, t in enumerate(left[:100])]  # alike
    a, b = wordsets.word_sets(pa.array(left)), wordsets.word_sets(pa.chunked_array([right[:250], right[250:]]))
    i = np.array([rng.randrange(600) for _ in range(5000)] + list(range(100)))
    j = np.array([rng.randrange(500) for _ in range(5000)] + list(range(100)))
    got = wordsets.jaccard(a, i, b, j)
    assert got.tolist() == [_jaccard(left[x], right[y]) for x, y in zip(i.tolist(), j.tolist())]
    assert (got[-100:] == 1.0).sum() > 20 and ((got > 0) & (got < 1)).sum() > 100  # not all trivial scores
    in_order = wordsets.jaccard(a, np.arange(100), b, np.arange(100))  # consecutive rows: read as slices
    assert in_order.tolist() == [_jaccard(x, y) for x, y in zip(left[:100], right[:100])]


def test_slices_do_not_change_the_hashes_and_signatures_count_their_bits() -> None:
    rng = random.Random(3)
    texts = pa.array(_texts(rng, 400))
    whole = wordsets.word_sets(texts)
    part = wordsets.word_sets(texts.slice(100, 50))  # an Arrow slice: a non-zero offset into the buffers
    lo, hi = whole.bounds[100], whole.bounds[150]
    assert np.array_equal(part.hashes, whole.hashes[lo:hi]) and np.array_equal(part.bounds, whole.bounds[100:151] - lo)
    assert len(wordsets.word_sets(pa.array([], pa.string()))) == 0
    sig = wordsets.signatures(whole, 128)
    assert sig.bits.tolist() == np.bitwise_count(sig.sig).sum(axis=1).tolist()
    assert (sig.bits <= whole.counts).all() and sig.bits.sum() > 1000


def test_pruning_keeps_every_pair_that_reaches_the_threshold_and_drops_unrelated_ones() -> None:
    rng = random.Random(11)
    vocab = [f"v{k}" for k in range(5000)]
    left, right = [], []
    for _ in range(3000):
        size = rng.choice([1, 2, 5, 20, 120, 400])
        words = rng.sample(vocab, size)
        kept = rng.randint(0, size)  # shared words: scores spread over [0, 1], many near 0.5
        other = words[:kept] + rng.sample(vocab, rng.randint(max(0, size - kept - 3), size - kept + 3))
        left.append(" ".join(words))
        right.append(" ".join(other))
    a, b = wordsets.word_sets(pa.array(left)), wordsets.word_sets(pa.array(right))
    bits = wordsets.signature_bits_for(np.array([len(t.encode()) for t in left + right]))
    sa, sb = wordsets.signatures(a, bits), wordsets.signatures(b, bits)
    i = np.arange(3000)
    exact = wordsets.jaccard(a, i, b, i)
    keep = wordsets.may_reach(sa, i, sb, i, 0.5)
    assert ((exact >= 0.5) & ~keep).sum() == 0 and ((exact >= 0.45) & (exact < 0.55)).sum() > 100
    unrelated = np.roll(i, 1)  # another row's words: a Jaccard near 0
    assert wordsets.may_reach(sa, i, sb, unrelated, 0.5)[np.array([len(t.split()) >= 20 for t in left])].mean() < 0.1
    with pytest.raises(ValueError, match="different widths"):
        wordsets.may_reach(sa, i, wordsets.signatures(b, bits * 2), i, 0.5)


@pytest.mark.parametrize("bits", [64, 128, 512, 2048])
@pytest.mark.parametrize("threshold", [0.5, 0.8])
def test_pruning_is_a_bound_at_any_signature_width(bits: int, threshold: float) -> None:
    """The prune drops only pairs it proves below the threshold: whatever the width (a narrow one
    only keeps more), and for duplicated words, empty texts and sets of very different sizes."""
    rng = random.Random(bits)
    vocab = [f"v{k}" for k in range(300)]
    left, right = [], []
    for _ in range(4000):
        words = [rng.choice(vocab) for _ in range(rng.choice([0, 1, 3, 10, 40, 150]))]  # duplicates
        kept = rng.random() ** 0.3  # most pairs share much: scores crowd both thresholds
        other = [w for w in words if rng.random() < kept] + rng.sample(vocab, rng.randint(0, 4))
        left.append(" ".join(words))
        right.append(" ".join(other if rng.random() < 0.8 else rng.sample(vocab, rng.randint(0, 60))))
    a, b = wordsets.word_sets(pa.array(left)), wordsets.word_sets(pa.array(right))
    sa, sb = wordsets.signatures(a, bits), wordsets.signatures(b, bits)
    i = np.arange(4000)
    exact = wordsets.jaccard(a, i, b, i)
    assert exact.tolist() == [_jaccard(x, y) for x, y in zip(left, right)]
    keep = wordsets.may_reach(sa, i, sb, i, threshold)
    assert not ((exact >= threshold) & ~keep).any()
    assert (exact >= threshold).sum() > 100 and ((exact >= threshold - 0.1) & (exact < threshold)).sum() > 50
    if bits >= 512:  # wide enough to drop most of what falls well short
        assert keep[exact < threshold / 2].mean() < 0.1


def _edited(rng: random.Random, text: str) -> str:
    """Another version of ``text``: the same, a piece replaced anywhere (inside a word too), something
    added at either end, or an unrelated text."""
    roll = rng.random()
    if roll < 0.15:
        return text
    if roll < 0.7:
        start = rng.randint(0, len(text))
        stop = rng.randint(start, len(text))
        return text[:start] + "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 5))) + text[stop:]
    if roll < 0.8:
        return text + rng.choice(PIECES) + rng.choice(PIECES)
    if roll < 0.9:
        return rng.choice(PIECES) + text
    return _texts(rng, 1)[0]


def test_edits_scored_from_their_texts_equal_python_word_sets() -> None:
    """Scored from a shared prefix and suffix where they are long enough (NaN elsewhere): the same
    Jaccard as Python's sets, for edits that cut words apart, change case or whitespace; the more
    shared bytes a pair needs, the fewer pairs are scored this way."""
    rng = random.Random(5)
    left = _texts(rng, 4000)
    right = [_edited(rng, t) for t in left]
    before = np.ones(len(left), np.bool_)
    for least_shared in (0.0, 0.5, 0.9):
        got = wordsets.jaccard_of_edits(pa.array(left), pa.chunked_array([right[:1000], right[1000:]]), least_shared)
        scored = ~np.isnan(got)
        assert got[scored].tolist() == [_jaccard(left[k], right[k]) for k in np.flatnonzero(scored).tolist()]
        assert all(scored[k] for k, (x, y) in enumerate(zip(left, right)) if x == y and x.split())
        assert not (scored & ~before).any() and ((got[scored] > 0) & (got[scored] < 1)).sum() > 100
        before = scored
    assert 500 < before.sum() < len(left) - 1000  # at 0.9, many pairs are left to the hashes
    with pytest.raises(ValueError, match="as many texts"):
        wordsets.jaccard_of_edits(pa.array(left), pa.array(right[1:]), 0.5)
