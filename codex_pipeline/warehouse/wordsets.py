"""Word-set Jaccard for many chunk pairs at once: the redirect matcher's ``similar_text`` step.

The definition is the exact matcher's (:mod:`codex_pipeline.warehouse.redirect_exact`): a
chunk's words are ``frozenset(text.lower().split())`` and two chunks are as similar as the
Jaccard of those sets. Building 100k Python sets cost ~7 s, so here every word becomes a
64-bit hash computed with numpy straight from the Arrow text buffer (ASCII rows; a row with
other characters is first normalized by Python's own ``lower().split()``, so Unicode case and
whitespace rules stay Python's), and pairs are scored in two vectorized stages:

1. **prune** (:func:`may_reach`): each chunk gets an ``m``-bit signature, one bit per word
   hash bucket (``m`` about four buckets per word of a long chunk). A bit set in one
   signature and not in the other can only come from a word the other chunk lacks (a shared
   word sets its bit in both), so the bits the signatures do not share bound from below the
   words the sets do not share, and a pair whose bound already rules out Jaccard ``t`` is
   dropped. The test is exact: whatever the hashes, it never drops a pair at or above ``t``.
   Of unrelated 120-word chunks practically none survives (2 of 2.1 million pairs in
   ``bench/bench_redirects.py``'s rewrite); pairs sharing about 40% of their words or more do.
2. **verify** (:func:`jaccard`): the pairs that survive get the exact Jaccard from their
   sorted word hashes, the value the redirect row reports. "Exact" up to hashing: a word of
   up to eight bytes (the common case) is encoded without loss before it is mixed, and the
   mix is invertible but for one bit (63 bits are compared), so two such words share a hash
   with probability 2^-63; a longer word (or one holding a NUL byte) collides with another
   word of its pair with probability about ``n²/2^64`` for ``n`` words, ~3e-15 for two
   120-word chunks.

So the matches equal the exact matcher's unless two different words of a pair hash alike;
``bench/bench_redirects.py --check`` and the tests compare both matchers. Everything runs on
one thread: on the shared two-core machine, threads bought wall time with about a fifth more
CPU time, and CPU time is what the redirect step is budgeted in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "Signatures", "WordSets", "jaccard", "may_reach", "signature_bits_for",
    "signatures", "word_sets",
]


_U64 = np.uint64
_MASK = np.array([0] + [(1 << (8 * k)) - 1 for k in range(1, 8)] + [(1 << 64) - 1], dtype=np.uint64)
_SALT = np.array([(0x9E3779B97F4A7C15 * (k + 1)) % (1 << 64) for k in range(9)], dtype=np.uint64)
_K1, _K2 = _U64(0xFF51AFD7ED558CCD), _U64(0xC4CEB9FE1A85EC53)
_K2_EVEN = _U64((0xC4CEB9FE1A85EC53 << 1) % (1 << 64))  # the last multiply also clears the lowest bit
_S32, _S33 = _U64(32), _U64(33)
_SENTINEL = np.iinfo(np.uint64).max
_BLOCK_BYTES = 1 << 18  # text tokenized and hashed at once: the per-word temporaries stay in cache
_SCORE_CELLS = 1 << 17  # matrix cells handled at once by jaccard() and may_reach(): they stay in cache


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


def _fmix(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer, in place: every input bit reaches every output bit."""
    h ^= h >> _S33
    h *= _K1
    h ^= h >> _S33
    h *= _K2
    h ^= h >> _S33
    return h


# -- word hashes -------------------------------------------------------------------------------

def word_sets(texts: pa.Array | pa.ChunkedArray) -> WordSets:
    """Hash the words of every text (see the module doc for what a word is)."""
    arr = _normalized(texts)
    n = len(arr)
    if n:  # a space after every text: words never run from one text into the next
        arr = pc.binary_join_element_wise(arr, pa.scalar(" ", arr.type), pa.scalar("", arr.type))
    offsets = _offsets(arr).astype(np.int64)
    offsets -= offsets[0]
    data = _Bytes(_data(arr))
    parts, bounds, seen = [], [], 0
    # blocks of whole texts, a few hundred kB each, so the temporaries stay in cache (and the
    # allocator hands the same memory back block after block: fresh pages cost page faults)
    edges = np.unique(np.r_[np.searchsorted(offsets[:n], np.arange(0, data.size, _BLOCK_BYTES)), n]).tolist()
    for first, last in zip(edges[:-1], edges[1:]):
        lo, hi = int(offsets[first]), int(offsets[last])
        starts, lengths, nul = _words(data.data[lo:hi], lo)
        parts.append(_hash(data, starts, lengths, nul))
        bounds.append(np.searchsorted(starts, offsets[first:last]) + seen)
        seen += len(starts)
    hashes = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    return WordSets(hashes, np.concatenate([*bounds, [seen]]).astype(np.int64))


def _normalized(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Lower-cased texts whose words split on ASCII whitespace exactly as Python's ``split()``.

    ASCII rows are only lower-cased (Arrow's ``ascii_lower``); the rare row with other
    characters becomes ``" ".join(text.lower().split())`` so Python's Unicode rules decide.
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
    return pc.ascii_lower(arr)


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


class _Bytes:
    """Text bytes read eight at a time from any position (little-endian; past the end: spaces)."""

    def __init__(self, data: np.ndarray) -> None:
        self.data, self.size = data, len(data)
        self._eight = np.ndarray((max(self.size - 7, 0),), dtype="<u8", buffer=data, strides=(1,))
        self._tail_at = max(self.size - 8, 0)
        tail = np.full(16, 32, np.uint8)
        tail[:self.size - self._tail_at] = data[self._tail_at:]
        self._tail = np.ndarray((9,), dtype="<u8", buffer=tail, strides=(1,))

    def eight(self, at: np.ndarray) -> np.ndarray:
        """The eight bytes from each position of ``at`` (ascending)."""
        if not len(at) or at[-1] < len(self._eight):
            return self._eight[at]  # fancy indexing: np.take is several times slower on this unaligned view
        near = int(np.searchsorted(at, len(self._eight)))
        return np.r_[self._eight[at[:near]], self._tail[at[near:] - self._tail_at]]


def _words(block: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start and length of each word of a block, and where its NUL bytes are (positions plus ``base``).

    Whitespace is Python's ASCII whitespace (``\\t\\n\\v\\f\\r``, ``\\x1c``-``\\x1f``, space).
    """
    word = block > 32
    least = int(block.min()) if len(block) else 32
    if least < 28:  # control bytes that are not whitespace to Python: rare, so tested on the few low bytes first
        low = block[block < 28]
        if np.any(low < 9) or np.any((low - np.uint8(14)) < 14):
            word |= (block < 9) | ((block - np.uint8(14)) < 14)
    flips = np.empty(len(block) + 1, np.bool_)  # flips[p]: word[p] differs from word[p - 1] (outside: no word)
    flips[0], flips[-1] = word[:1].any(), word[-1:].any()
    np.not_equal(word[1:], word[:-1], out=flips[1:-1])  # booleans: a third of the work of an int8 diff
    at = np.flatnonzero(flips)
    at += base
    starts = at[0::2]
    nul = np.flatnonzero(block == 0) + base if least == 0 else np.zeros(0, np.int64)
    return starts, at[1::2] - starts, nul


def _hash(data: _Bytes, starts: np.ndarray, lengths: np.ndarray, nul: np.ndarray) -> np.ndarray:
    """One hash per word (lowest bit 0): its bytes, without loss up to eight, then mixed.

    A word of up to eight bytes is its bytes with the rest zeroed: different words differ,
    except that a word ending in NUL bytes would equal one without them, so a word holding a
    NUL (``nul``: the positions of the NUL bytes) is salted by its length. A longer word folds
    in its length and the rest of its bytes through MurmurHash3's finalizer. The result is
    multiplied, xor-shifted and multiplied again (invertible but for the last product's top
    bit, which shifts out as the lowest bit is cleared), so every byte reaches the top bits
    that :func:`signatures` buckets by.
    """
    h = data.eight(starts)
    h &= (_U64(1) << (lengths << 3).view(np.uint64)) - _U64(1)  # the word's bytes (numpy shifts by 64 or more to 0)
    if len(nul):
        holder = np.unique(np.searchsorted(starts, nul, side="right") - 1)  # a NUL is a word byte
        h[holder] ^= _SALT[np.minimum(lengths[holder], 8)]
    longer = np.flatnonzero(lengths > 8)
    at = 8
    while len(longer):  # the rest of long words, eight bytes at a time
        more = data.eight(starts[longer] + at)
        more &= _MASK[np.minimum(lengths[longer] - at, 8)]
        mixed = h[longer]
        if at == 8:
            mixed ^= lengths[longer].astype(np.uint64) * _K2
        h[longer] = _fmix(mixed) ^ more
        at += 8
        longer = longer[lengths[longer] > at]
    h *= _K1
    h ^= h >> _S32
    h *= _K2_EVEN  # times an even number: the lowest bit is left free for a side tag (see _score_rows)
    return h


# -- signatures and pruning --------------------------------------------------------------------

def signature_bits_for(text_bytes: np.ndarray) -> int:
    """A signature width for chunks of these lengths in bytes, known before hashing: about four
    buckets per word (a word per six bytes) of a long chunk, 64..4096."""
    words = float(np.percentile(text_bytes, 90)) / 6 if len(text_bytes) else 0.0
    return int(min(4096, max(64, 1 << math.ceil(math.log2(max(4 * words, 1))))))


def signatures(words: WordSets, m: int) -> Signatures:
    """Each chunk's ``m``-bit signature (``m`` a power of two, at least 64)."""
    n = len(words)
    sig = np.zeros((n, m // 64), np.uint64)
    counts = words.counts
    step = max(1, _BLOCK_BYTES // m)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        sig[lo:hi] = _signature_rows(words.hashes[words.bounds[lo]:words.bounds[hi]], counts[lo:hi], m)
    return Signatures(sig, np.bitwise_count(sig).sum(axis=1, dtype=np.int64), counts.astype(np.int64), m)


def _signature_rows(hashes: np.ndarray, counts: np.ndarray, m: int) -> np.ndarray:
    """The signatures of consecutive chunks with these hashes (``counts`` per chunk): bucket = top bits."""
    rows = len(counts)
    cell = (hashes >> _U64(64 - int(math.log2(m)))).view(np.int64)
    cell += np.repeat(np.arange(0, rows * m, m, dtype=np.int64), counts)
    flags = np.zeros(rows * m, np.bool_)
    flags[cell] = True
    return np.packbits(flags.reshape(rows, m), axis=1, bitorder="little").view(np.uint64)


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
    common = np.empty(len(i), np.int64)
    step = max(1, _SCORE_CELLS // (a.m // 64))
    for lo in range(0, len(i), step):
        both = np.take(a.sig, i[lo:lo + step], axis=0)
        both &= np.take(b.sig, j[lo:lo + step], axis=0)
        common[lo:lo + step] = np.bitwise_count(both).sum(axis=1, dtype=np.int64)
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
    """Exact word-set Jaccard of the pairs ``(a[i], b[j])`` (0.0 where both sets are empty).

    Each pair becomes one row of a matrix holding both chunks' hashes, tagged with their
    side; rows are sorted (pairs in order of size, so padding stays small), and runs of
    equal hashes give the two set sizes and the intersection.
    """
    out = np.zeros(len(i), np.float64)
    la, lb = a.counts[i], b.counts[j]
    width = la + lb
    order = np.argsort(width, kind="stable")
    lo = 0
    while lo < len(order):
        rows = order[lo:lo + max(1, _SCORE_CELLS // max(int(width[order[lo]]), 8))]
        out[rows] = _score_rows(a, i[rows], la[rows], b, j[rows], lb[rows], max(int(width[rows[-1]]), 1))
        lo += len(rows)
    return out


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + n)`` for each start and length."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)


def _words_of(words: WordSets, rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The hashes of ``rows``, concatenated: a slice when the rows are consecutive (a re-key in order)."""
    first = words.bounds[rows]
    if len(rows) and np.array_equal(first[1:], first[:-1] + counts[:-1]):
        return words.hashes[first[0]:first[0] + counts.sum()]
    return words.hashes[_ranges(first, counts)]


def _place(flat: np.ndarray, row_starts: np.ndarray, counts: np.ndarray, values: np.ndarray) -> None:
    """Write each row's ``values`` (concatenated, ``counts`` per row) into ``flat`` from ``row_starts``."""
    if len(values):
        flat[_ranges(row_starts, counts)] = values


def _score_rows(a: WordSets, i: np.ndarray, la: np.ndarray, b: WordSets, j: np.ndarray, lb: np.ndarray,
                w: int) -> np.ndarray:
    """Jaccard per row of a ``(pairs, w)`` matrix: side A's hashes, then side B's with the low bit set."""
    r = len(i)
    mat = np.empty((r, w), np.uint64)
    row = np.arange(0, r * w, w, dtype=np.int64)
    flat = mat.reshape(-1)
    _place(flat, row, la, _words_of(a, i, la))
    _place(flat, row + la, lb, _words_of(b, j, lb) | _U64(1))
    flat[_ranges(row + la + lb, w - la - lb)] = _SENTINEL  # the padding
    mat.sort(axis=1)
    step = np.empty((r, w - 1 + (-(w - 1) % 8)), np.uint64)  # padded: rows of whole eight-byte words once compared
    step[:, w - 1:] = 2
    np.bitwise_xor(mat[:, 1:], mat[:, :-1], out=step[:, :w - 1])  # 0: the same word on the same side again; 1: other side
    repeats = _row_count(step == 0)
    shared = _row_count(step == 1)
    distinct = w - repeats - (la + lb < w)  # the padding's first sentinel is not a word
    union = distinct - shared
    return np.divide(shared, union, out=np.zeros(r, np.float64), where=union > 0)


def _row_count(flags: np.ndarray) -> np.ndarray:
    """True values per row of a boolean matrix whose rows are whole eight-byte words: bytes 0 or 1, popcounted."""
    return np.bitwise_count(flags.view(np.uint64)).sum(axis=1, dtype=np.int64)
