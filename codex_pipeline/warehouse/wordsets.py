"""Word-set Jaccard for many chunk pairs at once: the redirect matcher's ``similar_text`` step.

The definition is the exact matcher's (:mod:`codex_pipeline.warehouse.redirect_exact`): a
chunk's words are ``frozenset(text.lower().split())`` and two chunks are as similar as the
Jaccard of those sets. Building 100k Python sets cost ~7 s, so here every word becomes a
64-bit hash computed with numpy straight from the Arrow text buffer (ASCII rows; a row with
other characters is first normalized by Python's own ``lower().split()``, so Unicode case and
whitespace rules stay Python's), and pairs are scored in two vectorized stages:

1. **prune** (:func:`may_reach`): each chunk gets an ``m``-bit signature, one bit per word
   hash bucket (``m`` about four buckets per word of a long chunk). Words two chunks share set the same bits in both, so if the pair reaches
   Jaccard ``t`` its shared words (at least ``t/(1+t)`` of the sum of both set sizes) fill at
   least ``E - λ`` common bits, where ``E`` is the expected number of buckets that many words
   hit and ``λ = sqrt(I·ln(1/δ)/2)`` (McDiarmid: one word moves the bucket count by at most
   one). A pair with fewer common bits is dropped: the chance that a pair at or above ``t``
   is dropped is at most :data:`PRUNE_ERROR` (δ = 1e-12) per pair, treating the word hash as
   random. The length filter (``J <= min/max`` of the set sizes) is exact. Of unrelated
   120-word chunks (Jaccard ~0.02) about 1 pair in 250 survives to the second stage.
2. **verify** (:func:`jaccard`): the pairs that survive get the exact Jaccard from their
   sorted word hashes, the value the redirect row reports. "Exact" up to hashing: two
   different words of one pair share a hash (63 bits are compared) with probability about
   ``n²/2^64`` for ``n`` words, ~3e-15 for two 120-word chunks.

So the matches equal the exact matcher's unless a hash collides or a pruned pair was above
the threshold; ``bench/bench_redirects.py --check`` and the tests compare both matchers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["PRUNE_ERROR", "Signatures", "WordSets", "jaccard", "may_reach", "signature_bits", "signatures", "word_sets"]

PRUNE_ERROR = 1e-12
"""δ: the most likely a pair at or above the threshold is pruned (per pair, hashing taken as random)."""

_U64 = np.uint64
_MASK = np.array([0] + [(1 << (8 * k)) - 1 for k in range(1, 8)] + [(1 << 64) - 1], dtype=np.uint64)
_K1, _K2, _GOLDEN = _U64(0xFF51AFD7ED558CCD), _U64(0xC4CEB9FE1A85EC53), _U64(0x9E3779B97F4A7C15)
_S33 = _U64(33)
_ONES = _U64(np.iinfo(np.uint64).max)
_SENTINEL = np.iinfo(np.uint64).max
_BLOCK_BYTES = 1 << 20  # text hashed at once: the byte-wide temporaries stay in cache
_SCORE_CELLS = 1 << 17  # matrix cells handled at once by jaccard() and may_reach(): they stay in cache
_WORKERS = min(4, os.cpu_count() or 1)
"""Threads for independent blocks: numpy and Arrow release the GIL in every step used here."""
_T = TypeVar("_T")
_R = TypeVar("_R")


def _map(fn: Callable[[_T], _R], jobs: Sequence[_T]) -> list[_R]:
    """``[fn(job) for job in jobs]``, on a few threads when there is more than one job."""
    if len(jobs) < 2 or _WORKERS < 2:
        return [fn(job) for job in jobs]
    with ThreadPoolExecutor(min(_WORKERS, len(jobs))) as pool:
        return list(pool.map(fn, jobs))


@dataclass(frozen=True, slots=True)
class WordSets:
    """Each chunk's words as hashes: chunk ``k`` has ``hashes[bounds[k]:bounds[k + 1]]`` (duplicates
    kept: deduplication happens per pair, where it is needed). The lowest bit is always 0."""

    hashes: np.ndarray  # uint64
    bounds: np.ndarray  # int64, one more than there are chunks

    def __len__(self) -> int:
        return len(self.bounds) - 1

    @property
    def counts(self) -> np.ndarray:
        """Words per chunk, duplicates included: an upper bound on the set size."""
        return np.diff(self.bounds)


@dataclass(frozen=True, slots=True)
class Signatures:
    """``m``-bit word-bucket signatures: ``sig[k]`` has bit ``(hash >> 1) % m`` set for each word of chunk ``k``."""

    sig: np.ndarray  # (chunks, m / 64) uint64
    bits: np.ndarray  # int64: set bits per chunk, a lower bound on the set size
    counts: np.ndarray  # int64: words per chunk, an upper bound on the set size
    m: int


def _fmix(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer, in place: every input bit reaches every output bit."""
    h ^= h >> _S33
    h *= _K1
    h ^= h >> _S33
    h *= _K2
    h ^= h >> _S33
    return h


def _normalized(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Lower-cased texts whose words split on ASCII whitespace exactly as Python's ``split()``.

    ASCII rows are only lower-cased (Arrow's ``ascii_lower``); the rare row with other
    characters becomes ``" ".join(text.lower().split())`` so Python's Unicode rules decide.
    """
    arr = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    arr = arr.cast(pa.large_string())
    if arr.null_count:
        arr = arr.fill_null("")
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if len(arr) and arr.buffers()[2] else np.zeros(0, np.uint8)
    if np.any(data >= 128):  # a vectorized scan first: the per-row test is ten times slower
        ascii_rows = pc.string_is_ascii(arr)
        other = pc.invert(ascii_rows)
        words = [" ".join(t.lower().split()) for t in arr.filter(other).to_pylist()]
        arr = pc.replace_with_mask(arr, other, pa.array(words, pa.large_string()))
    return pc.ascii_lower(arr)


def word_sets(texts: pa.Array | pa.ChunkedArray) -> WordSets:
    """Hash the words of every text (see the module doc for what a word is)."""
    arr = _normalized(texts)
    n = len(arr)
    # a space before every text and after it (eight after the last): words never run from one
    # text into the next, and eight bytes can be read from any word's start
    text = pa.large_string()
    after = pa.array(np.where(np.arange(n) < n - 1, " ", " " * 8), text)
    arr = pc.binary_join_element_wise(pa.scalar(" ", text), arr, after, pa.scalar("", text)) if n \
        else pa.array([" " * 9], text)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    spaced = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[int(offsets[0]):int(offsets[-1])]
    offsets = offsets - offsets[0]
    eight = np.ndarray((len(spaced) - 7,), dtype="<u8", buffer=spaced, strides=(1,))  # eight bytes from each position
    # blocks of whole texts, about a MB each, so the temporaries stay in cache (and blocks run in parallel)
    edges = np.unique(np.r_[np.searchsorted(offsets[:n], np.arange(0, len(spaced), _BLOCK_BYTES)), n])

    def block(rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = int(offsets[rows[0]]), int(offsets[rows[1]])
        starts, lengths = _words(spaced[lo:hi])
        return np.searchsorted(starts, offsets[rows[0]:rows[1]] - lo), _hash(eight, starts + lo, lengths)

    parts = _map(block, list(zip(edges[:-1].tolist(), edges[1:].tolist())))
    seen = np.cumsum([0] + [len(h) for _, h in parts])
    bounds = [b + first for (b, _), first in zip(parts, seen)] + [seen[-1:]]
    hashes = [h for _, h in parts] or [np.zeros(0, np.uint64)]
    return WordSets(np.concatenate(hashes), np.concatenate(bounds).astype(np.int64))


def _words(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each word of a block that begins and ends with a space."""
    word = block > 32
    # control bytes that are not whitespace to Python: rare, so tested before anything is changed
    if np.any(block < 9) or np.any((block - np.uint8(14)) < 14):
        word |= (block < 9) | ((block - np.uint8(14)) < 14)
    flips = np.empty(len(block), np.bool_)
    flips[0] = False
    np.not_equal(word[1:], word[:-1], out=flips[1:])  # booleans: a third of the work of an int8 diff
    at = np.flatnonzero(flips)
    starts = at[0::2]
    return starts, at[1::2] - starts


def _hash(eight: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """One hash per word: its bytes eight at a time, with its length, mixed (lowest bit 0)."""
    h = eight[starts]  # fancy indexing: np.take is several times slower on this unaligned view
    short = np.minimum(lengths, 8).astype(np.uint64)
    h &= ~(_ONES << (short << _U64(3)))  # keep the word's own bytes (numpy shifts by 64 to 0)
    h ^= short * _GOLDEN  # and its length: "a" differs from "a\0"
    longer = np.flatnonzero(lengths > 8)
    at = 8
    while len(longer):  # the rest of long words, eight bytes at a time
        more = eight[starts[longer] + at] & _MASK[np.minimum(lengths[longer] - at, 8)]
        mixed = h[longer]
        if at == 8:
            mixed ^= lengths[longer].astype(np.uint64) * _K2
        h[longer] = _fmix(mixed) ^ more
        at += 8
        longer = longer[lengths[longer] > at]
    h = _fmix(h)
    h &= ~_U64(1)  # the lowest bit is left free for a side tag (see _score_rows)
    return h


def signature_bits(*sets: WordSets) -> int:
    """A signature width for these chunks: about four buckets per word of a long chunk, 64..4096."""
    counts = np.concatenate([s.counts for s in sets]) if sets else np.zeros(0, np.int64)
    typical = float(np.percentile(counts, 90)) if len(counts) else 0.0
    return int(min(4096, max(64, 1 << math.ceil(math.log2(max(4 * typical, 1))))))


def signatures(words: WordSets, m: int) -> Signatures:
    """Each chunk's ``m``-bit signature (``m`` a power of two, at least 64)."""
    n, per = len(words), m // 64
    sig = np.zeros((n, per), np.uint64)
    counts = words.counts
    step = max(1, _BLOCK_BYTES // m)

    def batch(lo: int) -> None:
        hi = min(n, lo + step)
        a, b = int(words.bounds[lo]), int(words.bounds[hi])
        rows = np.repeat(np.arange(hi - lo, dtype=np.int64), counts[lo:hi])
        flags = np.zeros((hi - lo) * m, np.bool_)
        flags[rows * m + ((words.hashes[a:b] >> _U64(1)) & _U64(m - 1)).astype(np.int64)] = True
        sig[lo:hi] = np.packbits(flags.reshape(hi - lo, m), axis=1, bitorder="little").view(np.uint64)

    _map(batch, range(0, n, step))
    bits = np.bitwise_count(sig).sum(axis=1, dtype=np.int64)
    return Signatures(sig, bits, counts.astype(np.int64), m)


def _floor_table(m: int, most: int) -> np.ndarray:
    """For ``I`` shared words (index), the fewest common bits they fill but with probability δ."""
    shared = np.arange(most + 1, dtype=np.float64)
    expected = m * -np.expm1(shared * math.log1p(-1.0 / m))
    slack = np.sqrt(shared * math.log(1.0 / PRUNE_ERROR) / 2.0)
    return np.ceil(expected - slack).astype(np.int64)


def may_reach(a: Signatures, i: np.ndarray, b: Signatures, j: np.ndarray, threshold: float) -> np.ndarray:
    """For pairs ``(a[i], b[j])``: False where the Jaccard is surely below ``threshold``."""
    if a.m != b.m:
        raise ValueError(f"signatures of different widths ({a.m} and {b.m} bits) cannot be compared")
    if len(i) == 0:
        return np.zeros(0, np.bool_)
    ca, cb = a.bits[i], b.bits[j]
    # |A| in [bits, count]: J <= min(|A|,|B|) / max(|A|,|B|), and J >= t needs |A & B| >= t/(1+t)(|A|+|B|)
    keep = (a.counts[i] >= threshold * cb) & (b.counts[j] >= threshold * ca)
    least_shared = np.ceil(threshold / (1.0 + threshold) * (ca + cb) - 1e-9).astype(np.int64)
    floor = _floor_table(a.m, int(least_shared.max()))[least_shared]
    common = np.empty(len(i), np.int64)
    step = max(1, _SCORE_CELLS // (a.m // 64))

    def batch(lo: int) -> None:
        both = np.take(a.sig, i[lo:lo + step], axis=0)
        both &= np.take(b.sig, j[lo:lo + step], axis=0)
        common[lo:lo + step] = np.bitwise_count(both).sum(axis=1, dtype=np.int64)

    _map(batch, range(0, len(i), step))
    return keep & (common >= floor)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + n)`` for each start and length."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)


def jaccard(a: WordSets, i: np.ndarray, b: WordSets, j: np.ndarray) -> np.ndarray:
    """Exact word-set Jaccard of the pairs ``(a[i], b[j])`` (0.0 where both sets are empty).

    Each pair becomes one row of a matrix holding both chunks' hashes, tagged with their
    side; rows are sorted (pairs of similar size together, so padding stays small), and
    runs of equal hashes give the two set sizes and the intersection.
    """
    out = np.zeros(len(i), np.float64)
    la, lb = a.counts[i], b.counts[j]
    width = la + lb
    klass = np.where(width > 8, np.ceil(np.log2(np.maximum(width, 1))), 3).astype(np.int64)
    jobs = []
    for k in np.unique(klass).tolist():
        members = np.flatnonzero(klass == k)
        step = max(1, _SCORE_CELLS // (1 << k))
        jobs += [(members[lo:lo + step], 1 << k) for lo in range(0, len(members), step)]

    def batch(job: tuple[np.ndarray, int]) -> None:
        rows, w = job
        out[rows] = _score_rows(a, i[rows], la[rows], b, j[rows], lb[rows], w)

    _map(batch, jobs)
    return out


def _words_of(words: WordSets, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The hashes of ``rows``, concatenated: a slice when the rows are consecutive (a re-key in order)."""
    first = words.bounds[rows]
    if len(rows) and np.array_equal(first[1:], first[:-1] + counts[:-1]):
        return words.hashes[first[0]:first[0] + counts.sum()]
    return words.hashes[_ranges(first, counts)]


def _score_rows(a: WordSets, i: np.ndarray, la: np.ndarray, b: WordSets, j: np.ndarray, lb: np.ndarray,
                w: int) -> np.ndarray:
    """Jaccard per row of a ``(pairs, w)`` matrix: side A's hashes, then side B's with the low bit set."""
    r = len(i)
    mat = np.full((r, w), _SENTINEL, np.uint64)
    column = np.arange(w)
    mat[column < la[:, None]] = _words_of(a, i, la)
    mat[(column >= la[:, None]) & (column < (la + lb)[:, None])] = _words_of(b, j, lb) | _U64(1)
    mat.sort(axis=1)
    step = mat[:, 1:] ^ mat[:, :-1]  # 0: the same word on the same side again; 1: on the other side
    repeats = (step == 0).sum(axis=1)
    shared = (step == 1).sum(axis=1)
    distinct = w - repeats - (la + lb < w)  # the padding's first sentinel is not a word
    union = distinct - shared
    return np.divide(shared, union, out=np.zeros(r, np.float64), where=union > 0)
