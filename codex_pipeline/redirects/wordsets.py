"""Word-set Jaccard for many chunk pairs at once: the redirect matcher's ``similar_text`` step.

The definition is the exact matcher's (:mod:`codex_pipeline_tests.redirect_reference`): a
chunk's words are ``frozenset(text.lower().split())`` and two chunks are as similar as the
Jaccard of those sets. Building 100k Python sets cost ~7 s, so here every word becomes a
64-bit hash read straight from the Arrow text buffer by a compiled loop
(:mod:`.word_kernels`; a row with non-ASCII characters is first normalized by Python's own
``lower().split()``, so Unicode case and whitespace rules stay Python's), and pairs are
scored in two stages:

1. **prune** (:func:`may_reach`): each chunk gets an ``m``-bit signature, one bit per word
   hash bucket (``m`` about four buckets per word of a long chunk). A bit set in one
   signature and not in the other can only come from a word the other chunk lacks (a shared
   word sets its bit in both), so the bits the signatures do not share bound from below the
   words the sets do not share, and a pair whose bound already rules out Jaccard ``t`` is
   dropped. The test is exact: whatever the hashes, it never drops a pair at or above ``t``.
   Of unrelated 120-word chunks practically none survives (2 of 2.1 million pairs in
   ``bench/bench_redirects.py``'s rewrite); pairs sharing about 40% of their words or more do.
2. **verify** (:func:`jaccard`): the pairs that survive get the exact Jaccard of their word
   hashes, the value the redirect row reports. "Exact" up to hashing: a word of up to eight
   bytes (the common case) is encoded without loss before it is mixed, and the mix is
   invertible but for one bit (63 bits are compared), so two such words share a hash with
   probability 2^-63; a longer word (or one holding a NUL byte) collides with another word
   of its pair with probability about ``n²/2^64`` for ``n`` words, ~3e-15 for two 120-word
   chunks.

A pair where one text is an edit of the other (a renamed section's chunk at its old place,
the common case) is scored before either: :func:`jaccard_of_edits` splits the two texts
into their shared prefix, their own middles and their shared suffix (cut at spaces, so
each splits into words alone), hashes the shared words once for both sides and needs no
word-set arrays, which halves the work for a light edit.

So the matches equal the exact matcher's unless two different words of a pair hash alike;
``bench/bench_redirects.py --check`` and the tests compare both matchers. Each call runs on
the calling thread; the compiled loops release the GIL, so the redirect matcher runs
its batches on several threads at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "Signatures", "WordSets", "jaccard", "jaccard_of_edits", "may_reach", "signature_bits_for",
    "signatures", "word_sets",
]


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
    """``m``-bit word-bucket signatures: ``sig[k]`` has bit ``hash >> (64 - log2 m)`` set for each word of chunk ``k``."""

    sig: np.ndarray  # (chunks, m / 64) uint64
    bits: np.ndarray  # int64: set bits per chunk, a lower bound on the set size
    counts: np.ndarray  # int64: words per chunk, an upper bound on the set size
    m: int


# -- word hashes -------------------------------------------------------------------------------

def word_sets(texts: pa.Array | pa.ChunkedArray) -> WordSets:
    """Hash the words of every text (see the module doc for what a word is)."""
    data, offsets = _bytes(texts)
    # numpy, not numba, allocates the outputs: it asks for huge pages, which halves the cost
    # of first touching ~100 MB; the bound (a word per two bytes) is only reserved, not touched
    hashes = np.empty((len(data) + len(offsets)) // 2 + 1, np.uint64)
    bounds = np.empty(len(offsets), np.int64)
    seen = _kernels().hash_words_into(data, offsets, hashes, bounds)
    return WordSets(hashes[:seen], bounds)


def _kernels() -> ModuleType:
    """The compiled loops, imported on first use: numba costs half a second of import."""
    from codex_pipeline.redirects import word_kernels
    return word_kernels


def _bytes(texts: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """The :func:`_normalized` texts' bytes and each one's int64 offsets into them (text ``k`` is
    ``data[offsets[k]:offsets[k + 1]]``), as the compiled loops read them."""
    arr = _normalized(texts)
    offsets = _offsets(arr).astype(np.int64)
    offsets -= offsets[0]
    return _data(arr), offsets


def _normalized(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The texts, with the rare row holding non-ASCII characters replaced by
    ``" ".join(text.lower().split())`` so Python's Unicode case and whitespace rules decide
    for it (the hashing lower-cases ASCII letters and splits on ASCII whitespace itself).
    """
    arr = _one_array(texts)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.large_string())
    if arr.null_count:
        arr = arr.fill_null("")
    data = _data(arr)
    if len(data) and data.max() >= 128:  # a vectorized scan first: the per-row test is ten times slower
        other = pc.invert(pc.string_is_ascii(arr))
        words = [" ".join(t.lower().split()) for t in arr.filter(other).to_pylist()]
        arr = pc.replace_with_mask(arr, other, pa.array(words, arr.type))
    return arr


def _one_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The column as one array: no copy when it has a single chunk (``combine_chunks`` would copy)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _offsets(arr: pa.Array) -> np.ndarray:
    """A string array's value offsets (either offset width)."""
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    return np.frombuffer(arr.buffers()[1], dtype=width, count=len(arr) + 1, offset=arr.offset * np.dtype(width).itemsize)


def _data(arr: pa.Array) -> np.ndarray:
    """A string array's value bytes from its first offset to its last."""
    if not len(arr) or arr.buffers()[2] is None:
        return np.zeros(0, np.uint8)
    offsets = _offsets(arr)
    return np.frombuffer(arr.buffers()[2], dtype=np.uint8)[int(offsets[0]):int(offsets[-1])]


# -- signatures and pruning --------------------------------------------------------------------

def signature_bits_for(text_bytes: np.ndarray) -> int:
    """A signature width for chunks of these lengths in bytes, known before hashing: about four
    buckets per word (a word per six bytes) of a long chunk, 64..4096."""
    words = float(np.percentile(text_bytes, 90)) / 6 if len(text_bytes) else 0.0
    return int(min(4096, max(64, 1 << math.ceil(math.log2(max(4 * words, 1))))))


def signatures(words: WordSets, m: int) -> Signatures:
    """Each chunk's ``m``-bit signature (``m`` a power of two, at least 64)."""
    sig = np.zeros((len(words), m // 64), np.uint64)
    bits = np.empty(len(words), np.int64)
    _kernels().fill_signatures(words.hashes, words.bounds, int(math.log2(m)), sig, bits)
    return Signatures(sig, bits, words.counts, m)


def may_reach(a: Signatures, i: np.ndarray, b: Signatures, j: np.ndarray, threshold: float) -> np.ndarray:
    """For pairs ``(a[i], b[j])``: False where the Jaccard is surely below ``threshold``.

    With ``t`` the threshold, ``J(A, B) >= t`` means ``|A ∩ B| >= t/(1+t) (|A| + |B|)``, so
    ``|A \\ B| <= (|A| - t|B|) / (1+t)`` and ``|A Δ B| <= (1-t)/(1+t) (|A| + |B|)``. A signature
    bit of A missing from B's can only come from a word of ``A \\ B``, and each word sets one
    bit, so those bits bound ``|A \\ B|`` from below; set bits and word counts bound the set
    sizes from below and above.
    """
    if a.m != b.m:
        raise ValueError(f"signatures of different widths ({a.m} and {b.m} bits) cannot be compared")
    if len(i) == 0:
        return np.zeros(0, np.bool_)
    common = _kernels().pair_common_bits(a.sig, np.ascontiguousarray(i, np.int64), b.sig, np.ascontiguousarray(j, np.int64))
    (own_a, other_a, half_a), (own_b, other_b, half_b) = _least_common(a, threshold), _least_common(b, threshold)
    slack = 1e-9  # keeps a pair that float rounding would put just over a bound
    keep = common >= half_a[i] + half_b[j] - slack  # the symmetric bound first: it drops most pairs
    some = np.flatnonzero(keep)
    si, sj, sc = i[some], j[some], common[some]
    keep[some] = (sc >= own_a[si] + other_b[sj] - slack) & (sc >= other_a[si] + own_b[sj] - slack)
    return keep


def _least_common(s: Signatures, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per chunk, the terms of the fewest common bits :func:`may_reach` asks of a pair: the bounds
    solved for ``common``, split into a part of each side so a pair costs three sums.

    With ``b`` set bits and ``n`` words: ``|A \\ B| <= (n_A - t b_B)/(1+t)`` needs
    ``common >= (b_A (1+t) - n_A)/(1+t) + t b_B/(1+t)``, and ``|A Δ B| <= (1-t)/(1+t) (n_A + n_B)``
    needs ``common >= z_A + z_B`` with ``z = (b (1+t) - (1-t) n) / (2 (1+t))``.
    """
    b, n = s.bits.astype(np.float64), s.counts.astype(np.float64)
    own = (b * (1 + t) - n) / (1 + t)
    other = t * b / (1 + t)
    half = (b * (1 + t) - (1 - t) * n) / (2 * (1 + t))
    return own, other, half


# -- exact Jaccard -----------------------------------------------------------------------------

def jaccard(a: WordSets, i: np.ndarray, b: WordSets, j: np.ndarray) -> np.ndarray:
    """Exact word-set Jaccard of the pairs ``(a[i], b[j])`` (0.0 where both sets are empty)."""
    return _kernels().pair_jaccard(a.hashes, a.bounds, np.ascontiguousarray(i, np.int64),
                                   b.hashes, b.bounds, np.ascontiguousarray(j, np.int64))


def jaccard_of_edits(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray, least_shared: float) -> np.ndarray:
    """Exact word-set Jaccard of texts ``a[k]`` and ``b[k]`` where one is an edit of the other: they
    share a prefix and a suffix of at least ``least_shared`` of the longer one's bytes, whose words
    are hashed once for both. NaN for the other pairs, which :func:`jaccard` scores from hashes."""
    if len(a) != len(b):
        raise ValueError(f"pairs need as many texts on each side ({len(a)} and {len(b)})")
    return _kernels().text_pair_jaccard(*_bytes(a), *_bytes(b), least_shared)
