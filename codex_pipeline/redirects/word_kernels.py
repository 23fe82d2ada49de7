"""Compiled loops of :mod:`codex_pipeline.redirects.wordsets`: word hashing, signatures, common
signature bits, pair Jaccard from hashes or from an edit's two texts.

Each walks bytes or words one at a time, which numpy could only do with a gather, a scatter
or a sort per word (that was 0.6 of the 1.1 CPU-seconds per 100k chunks); compiled (numba,
cached on disk after the first call) each is a single pass. Imported
only by the functions that need it: numba costs half a second of import, and most chunk
materializations change no id and never score a pair.
"""

from __future__ import annotations

import numba
import numpy as np

_K1 = np.uint64(0xFF51AFD7ED558CCD)
_K2 = np.uint64(0xC4CEB9FE1A85EC53)
_K2_EVEN = np.uint64((0xC4CEB9FE1A85EC53 << 1) % (1 << 64))  # the last multiply also clears the lowest bit
_NUL_SALT = np.uint64(0x9E3779B97F4A7C15)
_S32, _S33, _BYTE, _FULL = np.uint64(32), np.uint64(33), np.uint64(8), np.uint64(64)
_ZERO = np.uint64(0)
_LOWER = np.arange(256, dtype=np.uint64)
_LOWER[65:91] += 32  # ASCII capitals
_SPACE = np.zeros(256, np.bool_)
_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True  # Python's ASCII whitespace for str.split()


@numba.njit(cache=True, inline="always")
def _fmix(h: np.uint64) -> np.uint64:
    """MurmurHash3's 64-bit finalizer: every input bit reaches every output bit."""
    h ^= h >> _S33
    h *= _K1
    h ^= h >> _S33
    h *= _K2
    h ^= h >> _S33
    return h


@numba.njit(cache=True, inline="always")
def _word_at(data: np.ndarray, p: int, end: int) -> tuple[int, np.uint64]:
    """The word starting at ``data[p]`` (not a space): where it ends, and its hash.

    A word is a run of bytes that are not Python's ASCII whitespace, ASCII-lower-cased. Up to
    eight bytes it is its bytes little-endian, the rest zero, so different words differ
    (except that trailing NULs would vanish: a word holding a NUL is salted by its length).
    A longer word chains its eight-byte blocks through MurmurHash3's finalizer and folds in
    its length. The result is multiplied, xor-shifted and multiplied by an even number
    (invertible but for the top bit, which shifts out as the lowest bit is cleared), so every
    byte reaches the top bits that signatures bucket by.
    """
    start = p
    b = data[p]
    h = block = shift = _ZERO
    nul = False
    while True:
        nul |= b == 0
        block |= _LOWER[b] << shift
        p += 1
        if p == end:
            break
        b = data[p]
        if _SPACE[b]:
            break
        shift += _BYTE
        if shift == _FULL:  # a ninth (17th, ...) byte follows: chain the block
            h = block if p - start == 8 else _fmix(h) ^ block
            block = shift = _ZERO
    n = p - start
    if n <= 8:
        h = block ^ (_NUL_SALT * np.uint64(n + 1) if nul else _ZERO)
    else:
        h = _fmix(_fmix(h) ^ block ^ (np.uint64(n) * _K2))
    h *= _K1
    h ^= h >> _S32
    h *= _K2_EVEN
    return p, h


@numba.njit(cache=True, nogil=True)
def hash_words_into(data: np.ndarray, offsets: np.ndarray, hashes: np.ndarray, bounds: np.ndarray) -> int:
    """Hash every word (see :func:`_word_at`), text after text, into ``hashes`` (text ``k`` gets
    ``hashes[bounds[k]:bounds[k + 1]]``); returns how many there are."""
    seen = 0
    for t in range(len(offsets) - 1):
        bounds[t] = seen
        p, end = offsets[t], offsets[t + 1]
        while p < end:
            if _SPACE[data[p]]:
                p += 1
                continue
            p, hashes[seen] = _word_at(data, p, end)
            seen += 1
    bounds[len(offsets) - 1] = seen
    return seen


_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_S1, _S2, _S4, _S56 = np.uint64(1), np.uint64(2), np.uint64(4), np.uint64(56)


@numba.njit(cache=True, inline="always")
def _popcount(x: np.uint64) -> np.uint64:
    """Set bits of a 64-bit word (the SWAR count; LLVM turns it into one instruction where the CPU has one)."""
    x -= (x >> _S1) & _M1
    x = (x & _M2) + ((x >> _S2) & _M2)
    x = (x + (x >> _S4)) & _M4
    return (x * _H01) >> _S56


@numba.njit(cache=True, nogil=True)
def fill_signatures(hashes: np.ndarray, bounds: np.ndarray, log2_m: int, sig: np.ndarray, bits: np.ndarray) -> None:
    """Set bit ``hash >> (64 - log2_m)`` of row ``k`` of ``sig`` for each word of text ``k``, and count
    each row's set bits into ``bits`` (once the row is done: testing each bit first is a branch
    the CPU cannot predict)."""
    shift = np.uint64(64 - log2_m)
    for k in range(len(bounds) - 1):
        row = sig[k]
        for w in range(bounds[k], bounds[k + 1]):
            cell = np.int64(hashes[w] >> shift)
            row[cell >> 6] |= np.uint64(1) << np.uint64(cell & 63)
        count = _ZERO
        for word in row:
            count += _popcount(word)
        bits[k] = np.int64(count)


@numba.njit(cache=True, nogil=True)
def pair_common_bits(a_sig: np.ndarray, i: np.ndarray, b_sig: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Bits set in both signatures ``a_sig[i[p]]`` and ``b_sig[j[p]]``, per pair ``p``: read in place,
    where gathering the rows first would copy every pair's signatures."""
    out = np.empty(len(i), np.int64)
    for p in range(len(i)):
        ra, rb = a_sig[i[p]], b_sig[j[p]]
        count = _ZERO
        for w in range(len(ra)):
            count += _popcount(ra[w] & rb[w])
        out[p] = np.int64(count)
    return out


@numba.njit(cache=True, inline="always")
def _insert(keys: np.ndarray, marks: np.ndarray, h: np.uint64, stamp: int, side: int, shift: np.uint64,
            mask: int) -> int:
    """Mark word ``h`` as seen on ``side`` (1: A, 2: B, 3: both, for words the pair shares, inserted
    first) in this pair's table: 1 if the word is new to the pair, 2 if side B meets a word of
    side A for the first time, else 0."""
    slot = np.int64(h >> shift)
    while True:
        m = marks[slot]
        if m < stamp:  # a slot this pair has not used: the word is new
            keys[slot] = h
            marks[slot] = stamp + side
            return 1
        if keys[slot] == h:
            if side == 2 and m == stamp + 1:
                marks[slot] = stamp + 3
                return 2
            return 0
        slot = (slot + 1) & mask


@numba.njit(cache=True, inline="always")
def _table(words: int, bits: int, keys: np.ndarray, marks: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """The pair table, grown to hold ``words`` at most half full (so probes stay short)."""
    if 2 * words > (1 << bits):
        while 2 * words > (1 << bits):
            bits += 1
        keys = np.zeros(1 << bits, np.uint64)
        marks = np.zeros(1 << bits, np.int64)
    return bits, keys, marks


@numba.njit(cache=True, nogil=True)
def pair_jaccard(a_hashes: np.ndarray, a_bounds: np.ndarray, i: np.ndarray,
                 b_hashes: np.ndarray, b_bounds: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Exact Jaccard of the word sets ``(a[i], b[j])`` (0.0 where both are empty).

    Each pair fills an open-addressing table with its words, marking the side each was
    seen on, so duplicates and the intersection are counted in one pass over both. The
    table is cleared by a per-pair stamp instead of being zeroed.
    """
    out = np.zeros(len(i), np.float64)
    bits = 6
    keys = np.zeros(1 << bits, np.uint64)
    marks = np.zeros(1 << bits, np.int64)  # pair stamp (a multiple of 4) + the sides seen (1: A, 2: B)
    for p in range(len(i)):
        a0, a1 = a_bounds[i[p]], a_bounds[i[p] + 1]
        b0, b1 = b_bounds[j[p]], b_bounds[j[p] + 1]
        bits, keys, marks = _table(a1 - a0 + b1 - b0, bits, keys, marks)
        stamp = 4 * (p + 1)
        shift = np.uint64(64 - bits)
        mask = (1 << bits) - 1
        na = 0
        for w in range(a0, a1):
            na += _insert(keys, marks, a_hashes[w], stamp, 1, shift, mask)
        only_b = shared = 0
        for w in range(b0, b1):
            got = _insert(keys, marks, b_hashes[w], stamp, 2, shift, mask)
            only_b += got == 1
            shared += got == 2
        union = na + only_b
        if union > 0:
            out[p] = shared / union
    return out


@numba.njit(cache=True, inline="always")
def _insert_words(data: np.ndarray, p: int, end: int, keys: np.ndarray, marks: np.ndarray, stamp: int, side: int,
                  shift: np.uint64, mask: int) -> tuple[int, int]:
    """Insert the words of ``data[p:end]`` into a pair's table (see :func:`_insert`): (words new to
    the pair, words of side B first met on side A)."""
    new = met = 0
    while p < end:
        if _SPACE[data[p]]:
            p += 1
            continue
        p, h = _word_at(data, p, end)
        got = _insert(keys, marks, h, stamp, side, shift, mask)
        new += got == 1
        met += got == 2
    return new, met


@numba.njit(cache=True, nogil=True)
def text_pair_jaccard(a_data: np.ndarray, a_offsets: np.ndarray, b_data: np.ndarray, b_offsets: np.ndarray,
                      least_shared: float) -> np.ndarray:
    """Exact Jaccard of the word sets of texts ``a[p]`` and ``b[p]`` where the two share a common
    prefix and suffix of at least ``least_shared`` of the longer one's bytes; NaN elsewhere.

    The prefix is cut back to end with a space and the suffix to start with one, so each text
    is the shared prefix, its own middle and the shared suffix, split into words apart. The
    shared words are hashed once, for both sides, and only the middles apart: a lightly edited
    text costs about half of hashing both and scoring the hashes (:func:`pair_jaccard`).
    """
    out = np.full(len(a_offsets) - 1, np.nan)
    bits = 6
    keys = np.zeros(1 << bits, np.uint64)
    marks = np.zeros(1 << bits, np.int64)  # pair stamp (a multiple of 4) + the sides seen (1: A, 2: B, 3: both)
    for p in range(len(out)):
        a0, a1, b0, b1 = a_offsets[p], a_offsets[p + 1], b_offsets[p], b_offsets[p + 1]
        la, lb = a1 - a0, b1 - b0
        most = min(la, lb)
        head = 0
        while head < most and a_data[a0 + head] == b_data[b0 + head]:
            head += 1
        if head < la or head < lb:  # not the same text: the prefix ends with a space (or is empty)
            while head > 0 and not _SPACE[a_data[a0 + head - 1]]:
                head -= 1
        tail = 0
        while tail < most - head and a_data[a1 - 1 - tail] == b_data[b1 - 1 - tail]:
            tail += 1
        while tail > 0 and not _SPACE[a_data[a1 - tail]]:  # the suffix starts with a space (or is empty)
            tail -= 1
        if head + tail < least_shared * max(la, lb) or head + tail == 0:
            continue
        bits, keys, marks = _table(la + lb - head - tail + 2, bits, keys, marks)  # more than the pair's words
        stamp = 4 * (p + 1)
        shift = np.uint64(64 - bits)
        mask = (1 << bits) - 1
        both = _insert_words(a_data, a0, a0 + head, keys, marks, stamp, 3, shift, mask)[0]
        both += _insert_words(a_data, a1 - tail, a1, keys, marks, stamp, 3, shift, mask)[0]
        only_a = _insert_words(a_data, a0 + head, a1 - tail, keys, marks, stamp, 1, shift, mask)[0]
        new_b, met = _insert_words(b_data, b0 + head, b1 - tail, keys, marks, stamp, 2, shift, mask)
        union = both + only_a + new_b
        out[p] = (both + met) / union if union else 0.0
    return out
