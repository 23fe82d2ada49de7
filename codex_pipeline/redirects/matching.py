"""The redirect table: where a chunk id went after its partition was re-chunked.

``chunk_id`` hashes (doc_id, section_id), so it survives an edited section but not a
renamed one (a new heading, a new chunking version that cuts differently). Anyone
who stored an id (an eval set, a citation) can look it up in
``codex.<dataset>_redirects``: one row per id that existed in an earlier version of
the partition and no longer does, pointing at the newest id that holds the same
content, or saying the id is gone. Matching stays inside one document, except for step 1's last resort:

1. ``content_hash`` — a chunk with the identical text (a pure rename or move); when nothing
   else matches, an identical new chunk of another document of the partition (the
   document's own id changed);
2. ``span_overlap`` — the document's canonical text is unchanged (same ``rev8`` in
   the locator, and the same furthest chunk end, since ``rev8`` ignores whitespace
   edits that move offsets), so offsets are comparable: the chunk whose ``char_span`` best
   overlaps the old one (intersection over union, so a parent spanning the whole
   document does not beat the chunk cut at the same place);
3. ``similar_text`` — the text changed (a renamed heading, a light edit): among the
   chunks whose ids are new in this run and near the old one's place in reading
   order, the one whose words best match the old chunk's (Jaccard of word sets, at
   least :data:`MIN_SIMILARITY`), so an edited section is followed rather than
   orphaned, while a deleted chunk is not pinned on a neighbour that was already there;
4. ``removed`` — no target, so a lookup answers "gone" rather than nothing.

Rows accumulate over re-chunks and always point at ids of the current table. A fifth
kind, ``deleted``, is not computed here: :mod:`codex_pipeline.warehouse.current` writes
one such row (no target) for every chunk id of a document retracted by a tombstone or
a full snapshot, in ``redirects/deleted.parquet``, and drops it when the document lands
again.

Every step runs on whole columns: numpy over Arrow buffers, ids and content hashes turned
into integer codes once, word sets built a few thousand vanished rows at a time so they
stay in cache, words hashed and pairs scored by compiled loops (:mod:`.word_kernels`) that
release the GIL, so those batches run on as many threads as the process has cores (at most
four; ``threads=1`` for one). Why: a Python word set per chunk made re-keying a large
partition take many times longer; ``bench/bench_redirects.py`` times it (figures in
``docs/history.md``). Word-set similarity is pruned by signatures with
an exact bound and verified exactly (:mod:`.wordsets` gives the one error left, word-hash
collisions); :mod:`.redirect_exact` keeps the row-at-a-time matcher as the reference the
tests and ``bench/bench_redirects.py --check`` compare against.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codex_pipeline.redirects import wordsets
from codex_pipeline.warehouse.redirect_table import DELETED, LAST_PUBLISHED, REDIRECT_SCHEMA
from codex_pipeline.warehouse.storage import Warehouse

__all__ = [
    "DELETED", "INPUT_COLUMNS", "LAST_PUBLISHED", "MATCH_COLUMNS", "REDIRECT_SCHEMA", "compute_redirects",
    "default_threads", "match_vanished", "update_redirects",
]

CONTENT_HASH = "content_hash"
SPAN_OVERLAP = "span_overlap"
SIMILAR_TEXT = "similar_text"
REMOVED = "removed"
_BY_STRENGTH = [REMOVED, SIMILAR_TEXT, SPAN_OVERLAP, CONTENT_HASH]  # a chain is as weak as its weakest hop


@functools.cache
def _match_kinds() -> pa.Array:
    """The match kinds by strength, as Arrow strings; built on first use (pyarrow's first ``pa.array``
    imports pandas: 0.5 s of every import of the asset definitions)."""
    return pa.array(_BY_STRENGTH, pa.string())


_REMOVED, _SIMILAR, _SPAN, _HASH = range(4)
MIN_SIMILARITY = 0.5
"""Least word-set Jaccard for a ``similar_text`` match: at least half the words shared."""
SIMILAR_WINDOW = 32
"""How far (in reading order) a ``similar_text`` target may be from the old chunk's place."""
SAME_PLACE_SIMILARITY = 0.8
"""A new chunk at the old one's place sharing this much is taken without scoring the window."""

# The chunk-table columns matching reads.
INPUT_COLUMNS = (
    "chunk_id", "doc_id", "section_id", "seq_index", "evidence_anchor",
    "chunking_version", "locator", "content_hash", "chunk_text",
)
MATCH_COLUMNS = ("doc_id", "old_chunk_id", "old_section_id", "old_chunking_version",
                 "new_chunk_id", "new_section_id", "match", "overlap")
"""What :func:`match_vanished` returns per vanished id (the redirect row less the run's constants)."""


_REV8 = re.compile(r"\|r=([0-9a-f]{8}|[0-9a-f]{12})\|s=")
_CHAR_SPAN = r'"char_span":\[(?P<start>\d+),(?P<end>\d+)\]'
_PAIRS_PER_BATCH = 1 << 18  # candidate pairs held at once: bounds memory (fresh memory costs page faults)
_ROWS_PER_BATCH = 4096  # vanished rows whose words are hashed and scored at once
_MAX_THREADS = 4  # threads scoring batches: more gain little, as the batches share memory bandwidth
_PROBE = 64  # pairs at the old place scored before deciding whether pruning the others pays
_EDIT_SHARE = 0.5  # least share of bytes in a common prefix and suffix for scoring a pair from its texts
_SEQ_BIAS = 1 << 31  # seq_index as an unsigned 32-bit field of a (document, seq) sort key
_MIX = np.uint64(0xFF51AFD7ED558CCD)  # an odd multiplier (MurmurHash3's)
_ALL_BYTES = np.uint64(0x0101010101010101)  # eight true booleans, read as one number
_U24, _U32 = np.uint64(0xFFFFFF), np.uint64(0xFFFFFFFF)
_REV_END = np.uint64(int.from_bytes(b"|s=", "little"))


# -- small vectorized helpers ------------------------------------------------------------------

def _is_in(values: pa.ChunkedArray | pa.Array, among: pa.ChunkedArray | pa.Array) -> pa.Array:
    among = among.combine_chunks() if isinstance(among, pa.ChunkedArray) else among
    return pc.is_in(values.cast(pa.string()), value_set=among.cast(pa.string()))


def _np(column: pa.ChunkedArray | pa.Array, dtype: type = np.int64) -> np.ndarray:
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=dtype)


def _where(mask: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Positions where a boolean column is true (null counts as false)."""
    return np.flatnonzero(_np(mask.fill_null(False), np.bool_))


def _codes(values: pa.ChunkedArray | pa.Array, among: pa.Array) -> np.ndarray:
    """Position of each value in ``among`` (-1 where absent or null)."""
    found = pc.index_in(values.cast(pa.string()), value_set=among.cast(pa.string()))
    return _np(found.fill_null(-1))


def _joint_codes(a: pa.ChunkedArray | pa.Array, b: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes for the values of two columns from one dictionary (equal values, equal codes; null: -1),
    and how many distinct values there are: one pass over the strings, then set tests on integers."""
    chunks = [c.cast(pa.string()) for col in (a, b)
              for c in (col.chunks if isinstance(col, pa.ChunkedArray) else [col])]
    both = pa.concat_arrays(chunks) if chunks else pa.array([], pa.string())
    fixed = _fixed_width_codes(both)
    if fixed is not None:
        codes, size = fixed
    else:
        encoded = pc.dictionary_encode(both)
        codes, size = _np(encoded.indices.fill_null(-1)), len(encoded.dictionary)
    return codes[:len(a)], codes[len(a):], size


def _fixed_width_codes(strings: pa.Array) -> tuple[np.ndarray, int] | None:
    """:func:`_joint_codes` for strings all of one length (ids, hex digests), in half of Arrow's time; else None.

    Each string's bytes are mixed into a number and the numbers sorted; every string is then
    compared with the first of its number's group, so the codes are exact (a collision, which
    the comparison finds, hands the strings to Arrow's dictionary instead).
    """
    if not len(strings) or strings.null_count:
        return None
    offsets = np.frombuffer(strings.buffers()[1], np.int32, len(strings) + 1, strings.offset * 4)
    width = int(offsets[1] - offsets[0])
    if width == 0 or not np.all(np.diff(offsets) == width):
        return None
    rows = np.frombuffer(strings.buffers()[2], np.uint8)[offsets[0]:offsets[-1]].reshape(len(strings), width)
    if width % 8 == 0 and rows.ctypes.data % 8 == 0:
        words = rows.view(np.uint64)  # each string as eight-byte words: the buffer itself
    else:
        words = np.zeros((len(strings), -(-width // 8)), np.uint64)
        words.view(np.uint8)[:, :width] = rows
    key = np.zeros(len(strings), np.uint64)
    for column in words.T:
        key ^= column
        key *= _MIX
        key ^= key >> np.uint64(32)
    order = np.argsort(key)
    ranked = key[order]
    first_of_run = np.r_[True, ranked[1:] != ranked[:-1]]
    codes = np.empty(len(strings), np.int64)
    codes[order] = np.cumsum(first_of_run) - 1
    first = order[first_of_run][codes]  # each string's group's first string
    if not all(np.array_equal(column[first], column) for column in words.T):
        return None
    return codes, int(first_of_run.sum())


def _member(codes: np.ndarray, among: np.ndarray, size: int) -> np.ndarray:
    """Which ``codes`` occur in ``among`` (codes of one :func:`_joint_codes` call; -1 never does)."""
    table = np.zeros(size + 1, np.bool_)
    table[among[among >= 0]] = True
    return table[np.where(codes >= 0, codes, size)]


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All pairs (owner k, position p) with ``lo[k] <= p < hi[k]``."""
    counts = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(len(lo), dtype=np.int64), counts)
    starts = np.cumsum(counts) - counts
    return owner, np.arange(len(owner), dtype=np.int64) - np.repeat(starts - lo, counts)


def _first_per_owner(owner: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """Index (into the pair arrays) of each owner's best pair: least ``keys``, the first most significant."""
    order = np.lexsort((*reversed(keys), owner))
    ranked = owner[order]
    return order[np.r_[True, ranked[1:] != ranked[:-1]]] if len(order) else order


def _batches(counts: np.ndarray, limit: int = _PAIRS_PER_BATCH) -> Iterator[np.ndarray]:
    """Owner index slices whose pair counts sum to about ``limit`` (at least one owner each)."""
    cum = np.cumsum(counts)
    lo = 0
    while lo < len(counts):
        base = cum[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(cum, base + limit, side="right")))
        yield np.arange(lo, min(hi, len(counts)))
        lo = hi


def _covered(lo: np.ndarray, hi: np.ndarray, size: int) -> np.ndarray:
    """Which of ``size`` positions fall in at least one range ``[lo, hi)``."""
    depth = np.bincount(lo, minlength=size + 1)[:size + 1] - np.bincount(hi, minlength=size + 1)[:size + 1]
    return np.cumsum(depth[:-1]) > 0


def _spans(anchors: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """``char_span`` of each evidence anchor (regex on the compact form, JSON for the rest)."""
    parts = pc.extract_regex(anchors.cast(pa.string()), _CHAR_SPAN)
    starts = pc.struct_field(parts, "start")
    ok = _np(pc.is_valid(starts), np.bool_)
    start = np.zeros(len(anchors), np.int64)
    end = np.zeros(len(anchors), np.int64)
    if ok.any():
        start[ok] = _np(pc.struct_field(parts, "start").drop_null().cast(pa.int64()))
        end[ok] = _np(pc.struct_field(parts, "end").drop_null().cast(pa.int64()))
    for k in np.flatnonzero(~ok):  # not the compact form RowBuffer writes: parse it properly
        s, e = json.loads(anchors[int(k)].as_py())["char_span"]
        start[k], end[k] = int(s), int(e)
    return start, end


def _revs(locators: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Each locator's ``rev8`` (or ``rev12``) as two numbers, both equal exactly when the revs are (-1: none).

    The first ``|r=`` of a locator is read straight from the Arrow buffer (its rev's bytes are
    the numbers); a locator whose first ``|r=`` is not followed by a rev (never one the
    chunkers write) gets the regex.
    """
    arr = locators.combine_chunks() if isinstance(locators, pa.ChunkedArray) else locators
    arr = arr.cast(pa.large_string())
    at = _np(pc.find_substring(arr, "|r=").fill_null(-1))
    head, tail = np.full(len(arr), -1, np.int64), np.full(len(arr), -1, np.int64)
    rows = np.flatnonzero(at >= 0)
    if not len(rows):
        return head, tail
    offsets = np.frombuffer(arr.buffers()[1], np.int64, len(arr) + 1, arr.offset * 8)
    data = np.r_[np.frombuffer(arr.buffers()[2], np.uint8)[:offsets[-1]], np.zeros(16, np.uint8)]
    eight = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    start = offsets[rows] + at[rows] + 3  # the first byte after "|r="
    room = offsets[rows + 1] - start
    words = np.stack((eight[start], eight[start + 8]), axis=1)  # the 16 bytes there (zeros past the end)
    window = words.view(np.uint8)
    hexy = (((window - np.uint8(48)) < 10) | ((window - np.uint8(97)) < 6)).view(np.uint64)
    after = words[:, 1]
    short = (room >= 11) & (hexy[:, 0] == _ALL_BYTES) & ((after & _U24) == _REV_END)
    long = (~short & (room >= 15) & (hexy[:, 0] == _ALL_BYTES) & ((hexy[:, 1] & _U32) == (_ALL_BYTES & _U32))
            & (((after >> np.uint64(32)) & _U24) == _REV_END))
    found = short | long
    head[rows[found]] = words[found, 0].view(np.int64)  # hex digits are ASCII: never negative
    tail[rows[short]] = 0
    tail[rows[long]] = ((after[long] & _U32) | np.uint64(1 << 40)).view(np.int64)
    for k in rows[~found].tolist():  # the first "|r=" holds no rev: search on, as the regex does
        rev = _REV8.search(arr[k].as_py())
        if rev:
            digits = rev.group(1).encode()
            head[k] = int.from_bytes(digits[:8], "little")
            tail[k] = int.from_bytes(digits[8:], "little") | (1 << 40) if len(digits) == 12 else 0
    return head, tail


# -- matching ----------------------------------------------------------------------------------

class _Side:
    """Rows of one table (vanished rows or candidate rows): sort keys as numpy arrays, other columns read on demand."""

    def __init__(self, table: pa.Table, rows: np.ndarray, docs: pa.Array) -> None:
        self.table = table
        self.rows = rows  # table row of each position (positions may be reordered)
        self.doc = _codes(self.column("doc_id"), docs)
        self.seq = _np(self.column("seq_index"))

    def reorder(self, order: np.ndarray) -> None:
        self.rows, self.doc, self.seq = self.rows[order], self.doc[order], self.seq[order]

    def column(self, name: str, positions: np.ndarray | None = None) -> pa.ChunkedArray:
        """Column ``name`` at ``positions`` (all, in position order, by default); no copy when those are consecutive rows."""
        rows = self.rows if positions is None else self.rows[positions]
        if len(rows) and rows[-1] - rows[0] == len(rows) - 1 and np.all(np.diff(rows) == 1):
            return self.table.column(name).slice(int(rows[0]), len(rows))
        return self.table.column(name).take(rows)

    def text_bytes(self, positions: np.ndarray) -> np.ndarray:
        """The length in bytes of ``chunk_text`` at ``positions`` (read from the offsets: no copy)."""
        return _np(pc.binary_length(self.table.column("chunk_text")).fill_null(0))[self.rows[positions]]

    def spans(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _spans(self.column("evidence_anchor", positions))

    def revs(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _revs(self.column("locator", positions))


class _Matching:
    """One hop of matching: every vanished row against the current rows of its document.

    Results live in ``target`` (a position in the candidate table, -1 for none), ``how``
    (an index into :data:`_BY_STRENGTH`) and ``score`` (NaN where the match has none).
    """

    def __init__(self, previous: pa.Table, gone: np.ndarray, current: pa.Table, cands: np.ndarray,
                 existed: np.ndarray, threads: int) -> None:
        docs = pc.unique(previous.column("doc_id").take(gone).cast(pa.string()))
        self.previous, self.docs, self.threads = previous, docs, threads
        self.g = _Side(previous, gone, docs)
        self.c = _Side(current, cands, docs)
        order = np.argsort((self.c.doc << 32) | (self.c.seq + _SEQ_BIAS), kind="stable")  # reading order, then table order
        self.c.reorder(order)
        self.fresh = ~existed[order]  # ids new in this run
        # content hashes as codes of one dictionary: the vanished rows', then every current row's
        self.g_hash, self.current_hash, self.hashes = _joint_codes(self.g.column("content_hash"),
                                                                   current.column("content_hash"))
        self.key = (self.c.doc << 32) | (self.c.seq + _SEQ_BIAS)
        self.lo = np.searchsorted(self.c.doc, self.g.doc, side="left")
        self.hi = np.searchsorted(self.c.doc, self.g.doc, side="right")
        n = len(gone)
        self.target = np.full(n, -1, np.int64)
        self.how = np.full(n, _REMOVED, np.int64)
        self.score = np.full(n, np.nan)

    def _take(self, owners: np.ndarray, targets: np.ndarray, how: int, score: np.ndarray | None = None) -> None:
        self.target[owners] = targets
        self.how[owners] = how
        if score is not None:
            self.score[owners] = score

    def open(self) -> np.ndarray:
        return np.flatnonzero((self.target < 0) & (self.hi > self.lo))

    def by_hash(self) -> None:
        """Step 1: identical text in the same document; ids new in this run first, then the nearest."""
        c_hash = self.current_hash[self.c.rows]
        has = np.flatnonzero(c_hash >= 0)
        keys = self.c.doc[has] * self.hashes + c_hash[has]
        order = np.argsort(keys, kind="stable")
        keys, pos = keys[order], has[order]
        wanted = np.where(self.g_hash >= 0, self.g.doc * self.hashes + self.g_hash, -1)
        owner, k = _expand(np.searchsorted(keys, wanted, "left"), np.searchsorted(keys, wanted, "right"))
        cand = pos[k]
        best = _first_per_owner(owner, ~self.fresh[cand], np.abs(self.c.seq[cand] - self.g.seq[owner]),
                                self.c.seq[cand], cand)
        self._take(owner[best], cand[best], _HASH)

    def by_span(self) -> None:
        """Step 2: unchanged canonical text (same rev8 as the document's first chunk): best span IoU."""
        owners = self.open()
        if not len(owners):
            return
        firsts, first_of = np.unique(self.lo[owners], return_inverse=True)  # each document's first candidate
        (g_head, g_tail), (c_head, c_tail) = self.g.revs(owners), self.c.revs(firsts)
        owners = owners[(g_head >= 0) & (g_head == c_head[first_of]) & (g_tail == c_tail[first_of])]
        if not len(owners):
            return
        c_start, c_end = self.c.spans(np.arange(len(self.c.seq)))
        old_extent = self._old_extents()
        new_extent = np.full(len(self.docs), -1, np.int64)
        np.maximum.at(new_extent, self.c.doc, c_end)
        owners = owners[old_extent[self.g.doc[owners]] == new_extent[self.g.doc[owners]]]
        if not len(owners):
            return
        g_start, g_end = self.g.spans(owners)
        for part in _batches(self.hi[owners] - self.lo[owners]):
            mine = owners[part]
            owner, cand = _expand(self.lo[mine], self.hi[mine])
            s, e = g_start[part][owner], g_end[part][owner]
            cs, ce = c_start[cand], c_end[cand]
            inter = np.minimum(ce, e) - np.maximum(cs, s)
            union = np.maximum(ce, e) - np.minimum(cs, s)
            iou = np.divide(inter, union, out=np.zeros(len(inter)), where=inter > 0)
            best = _first_per_owner(owner, -iou, np.abs(self.c.seq[cand] - self.g.seq[mine][owner]),
                                    self.c.seq[cand], cand)
            best = best[iou[best] > 0]
            self._take(mine[owner[best]], cand[best], _SPAN, iou[best])

    def _old_extents(self) -> np.ndarray:
        """Each document's furthest chunk end in ``previous``: ``rev8`` hashes the *normalized*
        text, so a whitespace-only edit keeps it while moving the offsets after the edit, and
        offsets are compared only where the extent is unchanged too."""
        rows = _where(_is_in(self.previous.column("doc_id"), self.docs))
        docs = _codes(self.previous.column("doc_id").take(rows), self.docs)
        extent = np.full(len(self.docs), -1, np.int64)
        np.maximum.at(extent, docs, _spans(self.previous.column("evidence_anchor").take(rows))[1])
        return extent

    def by_words(self) -> None:
        """Step 3: the new chunk near the old place whose word set is most alike (see :mod:`.wordsets`).

        The vanished rows go in reading order, a few thousand at a time with the candidates
        their windows reach: word hashes stay small enough to be reused from cache (and from
        the allocator, where fresh pages would each cost a fault).
        """
        owners = self.open()
        if not len(owners):
            return
        owners = owners[np.lexsort((self.g.seq[owners], self.g.doc[owners]))]
        g_key = (self.g.doc[owners] << 32) | (self.g.seq[owners] + _SEQ_BIAS)
        lo = np.searchsorted(self.key, g_key - SIMILAR_WINDOW, side="left")
        hi = np.searchsorted(self.key, g_key + SIMILAR_WINDOW, side="right")
        here = np.searchsorted(self.key, g_key, side="left")
        bits = wordsets.signature_bits_for(self.g.text_bytes(owners))
        parts = [slice(first, first + _ROWS_PER_BATCH) for first in range(0, len(owners), _ROWS_PER_BATCH)]
        threads = min(self.threads, len(parts))
        if threads <= 1:
            for part in parts:
                self._by_words(owners[part], lo[part], hi[part], here[part], bits)
            return
        # batches share no state but what they read, and each writes only its own owners' results
        with ThreadPoolExecutor(threads, thread_name_prefix="redirect-words") as pool:
            for done in [pool.submit(self._by_words, owners[part], lo[part], hi[part], here[part], bits)
                         for part in parts]:
                done.result()

    def _by_words(self, owners: np.ndarray, lo: np.ndarray, hi: np.ndarray, here: np.ndarray, bits: int) -> None:
        """:meth:`by_words` for vanished rows in reading order, whose windows are ``[lo, hi)``, with ``bits``-bit signatures."""
        # a renamed or lightly edited section usually keeps its place: try that first, and where the
        # two texts share most of their bytes, score them from the texts (the shared words hashed once)
        at_place = np.flatnonzero((here < hi) & self.fresh[np.minimum(here, len(self.key) - 1)])
        untried = np.zeros(len(owners), np.bool_)
        if len(at_place):
            got = wordsets.jaccard_of_edits(self.g.column("chunk_text", owners[at_place]),
                                            self.c.column("chunk_text", here[at_place]), _EDIT_SHARE)
            ok = got >= SAME_PLACE_SIMILARITY
            self._take(owners[at_place[ok]], here[at_place[ok]], _SIMILAR, got[ok])
            untried[at_place[np.isnan(got)]] = True
        left = np.flatnonzero(self.target[owners] < 0)
        if not len(left):
            return
        owners, lo, hi, here, untried = owners[left], lo[left], hi[left], here[left], untried[left]
        base, top = int(lo[0]), int(hi[-1])  # the windows move forward: together they lie in [base, top)
        # the fresh candidates any window reaches get word sets; the others are never scored
        scored = base + np.flatnonzero(_covered(lo - base, hi - base, top - base) & self.fresh[base:top])
        if not len(scored):
            return
        c_row = np.full(top - base, -1, np.int64)
        c_row[scored - base] = np.arange(len(scored))
        words = _Scorer(wordsets.word_sets(self.g.column("chunk_text", owners)),
                        wordsets.word_sets(self.c.column("chunk_text", scored)), c_row, base, bits)
        at_place = np.flatnonzero(untried)
        if len(at_place):
            # pruning pays where most pairs fail; where the first ones mostly match (a light edit
            # throughout), it would only add signatures to pairs that are scored anyway
            probe, after = at_place[:_PROBE], at_place[_PROBE:]
            got = words.scores(probe, here[probe], SAME_PLACE_SIMILARITY, prune=False)
            prune = not len(got) or int(np.count_nonzero(got >= SAME_PLACE_SIMILARITY)) < 0.75 * len(got)
            got = np.r_[got, words.scores(after, here[after], SAME_PLACE_SIMILARITY, prune)]
            ok = got >= SAME_PLACE_SIMILARITY
            self._take(owners[at_place[ok]], here[at_place[ok]], _SIMILAR, got[ok])
        rest = np.flatnonzero(self.target[owners] < 0)
        for part in _batches(hi[rest] - lo[rest]):
            mine = rest[part]
            k, cand = _expand(lo[mine], hi[mine])
            alive = self.fresh[cand]
            k, cand = k[alive], cand[alive]
            got = words.scores(mine[k], cand, MIN_SIMILARITY)
            hit = got >= MIN_SIMILARITY
            k, cand, got = k[hit], cand[hit], got[hit]
            seq = self.g.seq[owners[mine]]
            best = _first_per_owner(k, -got, np.abs(self.c.seq[cand] - seq[k]), self.c.seq[cand], cand)
            self._take(owners[mine[k[best]]], cand[best], _SIMILAR, got[best])


class _Scorer:
    """Word sets of a batch's vanished rows and of its candidates (``c_row``: candidate position
    less ``base`` to word-set row); signatures are built the first time a pair is pruned."""

    def __init__(self, g_words: wordsets.WordSets, c_words: wordsets.WordSets, c_row: np.ndarray, base: int,
                 bits: int) -> None:
        self.g_words, self.c_words, self.c_row, self.base, self.bits = g_words, c_words, c_row, base, bits
        self._sig: tuple[wordsets.Signatures, wordsets.Signatures] | None = None

    def scores(self, mine: np.ndarray, cand: np.ndarray, least: float, prune: bool = True) -> np.ndarray:
        """Exact Jaccard of vanished row ``mine`` and candidate ``cand`` where it may reach ``least``, else -1."""
        out = np.full(len(mine), -1.0)
        rows = self.c_row[cand - self.base]
        keep = np.arange(len(mine))
        if prune and len(mine):
            if self._sig is None:
                self._sig = wordsets.signatures(self.g_words, self.bits), wordsets.signatures(self.c_words, self.bits)
            keep = np.flatnonzero(wordsets.may_reach(self._sig[0], mine, self._sig[1], rows, least))
        out[keep] = wordsets.jaccard(self.g_words, mine[keep], self.c_words, rows[keep])
        return out


def _moved(m: _Matching, current: pa.Table, current_existed: np.ndarray) -> tuple[np.ndarray, pa.Table | None]:
    """Last resort before ``removed``: the identical text under a new id of another document.

    A document whose id changed (a renamed record, a reader that now names it otherwise)
    loses all its chunk ids at once and has no candidates of its own. Returns, per vanished
    row, a position in the returned table of such targets (-1 for none).
    """
    lost = np.flatnonzero(m.target < 0)
    found = np.full(len(m.target), -1, np.int64)
    if not len(lost):
        return found, None
    same = np.flatnonzero(_member(m.current_hash, m.g_hash[lost], m.hashes) & ~current_existed)
    if not len(same):
        return found, None
    pool = current.select(["doc_id", "seq_index", "chunk_id", "section_id"]).take(same)
    p_hash = m.current_hash[same]
    docs = pool.column("doc_id").cast(pa.string())
    names = pc.unique(docs)
    doc_rank = np.argsort(_np(pc.array_sort_indices(names)))[_codes(docs, names)]  # doc_id's place in text order
    order = np.argsort(p_hash, kind="stable")
    ranked, wanted = p_hash[order], m.g_hash[lost]
    owner, k = _expand(np.searchsorted(ranked, wanted, "left"),
                       np.where(wanted >= 0, np.searchsorted(ranked, wanted, "right"), 0))
    cand = order[k]
    seq = _np(pool.column("seq_index"))
    best = _first_per_owner(owner, np.abs(seq[cand] - m.g.seq[lost][owner]), doc_rank[cand], seq[cand], cand)
    found[lost[owner[best]]] = cand[best]
    m.how[lost[owner[best]]] = _HASH
    return found, pool


def _targets(positions: np.ndarray, table: pa.Table) -> tuple[pa.Array, pa.Array]:
    """``chunk_id`` and ``section_id`` of ``table`` at each position (null where -1)."""
    if table.num_rows == 0:
        return pa.nulls(len(positions), pa.string()), pa.nulls(len(positions), pa.string())
    at = pa.array(np.where(positions >= 0, positions, 0))
    found = pa.array(positions >= 0)
    nothing = pa.scalar(None, pa.string())
    return tuple(pc.if_else(found, table.column(c).cast(pa.string()).take(at), nothing)
                 for c in ("chunk_id", "section_id"))


def _rounded(scores: np.ndarray) -> pa.Array:
    """Scores rounded as Python's ``round(x, 6)`` does (correctly rounded), NaN as null.

    ``rint(x * 1e6) / 1e6`` agrees with it except where ``x * 1e6`` lies within rounding
    error of a half: those few are rounded by Python.
    """
    scaled = scores * 1e6
    out = np.rint(scaled) / 1e6
    near_half = np.flatnonzero(np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6)
    out[near_half] = [round(x, 6) for x in scores[near_half].tolist()]
    return pa.array(out, pa.float64(), from_pandas=True)


def _empty_matches() -> pa.Table:
    return pa.table({c: pa.array([], pa.float64() if c == "overlap" else pa.string()) for c in MATCH_COLUMNS})


def default_threads() -> int:
    """Threads for the word-set step when nobody set them (``Warehouse.steps.redirect_threads``,
    ``$CODEX_REDIRECT_THREADS`` at the edge): the cores this process may run on, at most :data:`_MAX_THREADS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(_MAX_THREADS, cores))


def _matches(previous: pa.Table | None, current: pa.Table, threads: int | None = None) -> pa.Table:
    """:func:`match_vanished` in no particular order (the caller sorts)."""
    if previous is None or previous.num_rows == 0:
        return _empty_matches()
    old_ids, new_ids, size = _joint_codes(previous.column("chunk_id"), current.column("chunk_id"))
    gone = np.flatnonzero(~_member(old_ids, new_ids, size))
    if not len(gone):
        return _empty_matches()
    existed = _member(new_ids, old_ids, size)  # current ids that the previous table had too
    cands = _where(_is_in(current.column("doc_id"), previous.column("doc_id").take(gone)))
    m = _Matching(previous, gone, current, cands, existed[cands], default_threads() if threads is None else threads)
    m.by_hash()
    m.by_span()
    m.by_words()
    moved, pool = _moved(m, current, existed)
    at_rows = np.where(m.target >= 0, m.c.rows[np.maximum(m.target, 0)], -1) if len(m.c.rows) else m.target
    new_id, new_section = _targets(at_rows, current)
    if pool is not None:
        is_moved = pa.array(moved >= 0)
        moved_id, moved_section = _targets(moved, pool)
        new_id = pc.if_else(is_moved, moved_id, new_id)
        new_section = pc.if_else(is_moved, moved_section, new_section)
    old = previous.select(["doc_id", "chunk_id", "section_id", "chunking_version"]).take(gone)
    columns = {
        "doc_id": old.column("doc_id"),
        "old_chunk_id": old.column("chunk_id"),
        "old_section_id": old.column("section_id"),
        "old_chunking_version": old.column("chunking_version"),
        "new_chunk_id": new_id,
        "new_section_id": new_section,
        "match": _match_kinds().take(pa.array(m.how)),
        "overlap": _rounded(m.score),
    }
    return pa.table({n: c.cast(pa.float64() if n == "overlap" else pa.string()) for n, c in columns.items()})


def match_vanished(previous: pa.Table | None, current: pa.Table, threads: int | None = None) -> pa.Table:
    """Every id of ``previous`` missing from ``current``, matched within its document.

    Columns :data:`MATCH_COLUMNS`, one row per vanished id, sorted by ``old_chunk_id``.
    Only the vanished rows and the current rows of their documents are read: re-running
    unchanged input (the common case) stays one vectorized set test. ``threads`` scores
    word sets (default :func:`default_threads`); the result does not depend on it.
    """
    out = _matches(previous, current, threads)
    return out.take(pc.sort_indices(out, sort_keys=[("old_chunk_id", "ascending")]))


# -- merging with the stored table ----------------------------------------------------------------

def _strength(match: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return _codes(match, _match_kinds())


def _carried(stored: pa.Table | None, current: pa.Table, fresh: pa.Table, version: str) -> pa.Table | None:
    """Earlier redirect rows re-resolved against the current table: A→B then B→C becomes A→C."""
    if stored is None or stored.num_rows == 0:
        return None
    stored = stored.select(REDIRECT_SCHEMA.names)
    again = pc.or_(_is_in(stored.column("old_chunk_id"), current.column("chunk_id")),
                   _is_in(stored.column("old_chunk_id"), fresh.column("old_chunk_id")))
    rows = stored.filter(pc.invert(again))  # the id exists again (or was just re-matched): no redirect
    if rows.num_rows == 0:
        return None
    target = rows.column("new_chunk_id")
    at_current = _codes(target, current.column("chunk_id").combine_chunks())
    at_fresh = _codes(target, fresh.column("old_chunk_id").combine_chunks())
    none = _np(target.is_null(), np.bool_)
    in_current, in_fresh = at_current >= 0, (at_current < 0) & (at_fresh >= 0)
    lost = ~none & ~in_current & ~in_fresh  # the target vanished without a trace (its chunks file was lost)
    new_id = rows.column("new_chunk_id").combine_chunks()
    section = rows.column("new_section_id").combine_chunks()
    match = rows.column("match").combine_chunks()
    overlap = rows.column("overlap").to_numpy(zero_copy_only=False).astype(np.float64)
    if in_current.any():
        cur_section = current.column("section_id").cast(pa.string()).take(pa.array(np.maximum(at_current, 0)))
        section = pc.if_else(pa.array(in_current), cur_section, section)
    if in_fresh.any():
        hop = fresh.take(pa.array(np.maximum(at_fresh, 0)))
        new_id = pc.if_else(pa.array(in_fresh), hop.column("new_chunk_id"), new_id)
        section = pc.if_else(pa.array(in_fresh), hop.column("new_section_id"), section)
        weaker = np.minimum(_strength(match), _strength(hop.column("match")))
        chained = np.where(in_fresh, weaker, -1)
        match = pc.if_else(pa.array(in_fresh), _match_kinds().take(pa.array(np.maximum(weaker, 0))), match)
        hop_overlap = hop.column("overlap").to_numpy(zero_copy_only=False).astype(np.float64)
        # the hops' scores multiplied (a content_hash hop scores 1); only inexact kinds keep a score
        product = np.where(np.isnan(overlap) | (overlap == 0), 1.0, overlap) \
            * np.where(np.isnan(hop_overlap) | (hop_overlap == 0), 1.0, hop_overlap)
        inexact = np.isin(chained, [_SPAN, _SIMILAR])
        overlap = np.where(in_fresh, np.where(inexact, product, np.nan), overlap)
        overlap_col = pa.array([round(x, 6) if chain and x == x else x
                                for x, chain in zip(overlap.tolist(), in_fresh.tolist())], pa.float64(), from_pandas=True)
    else:
        overlap_col = rows.column("overlap").combine_chunks()
    gone = pa.array(lost)
    out = {
        **{name: rows.column(name) for name in REDIRECT_SCHEMA.names},
        "new_chunk_id": pc.if_else(gone, pa.scalar(None, pa.string()), new_id),
        "new_section_id": pc.if_else(gone, pa.scalar(None, pa.string()), section),
        "new_chunking_version": pa.repeat(pa.scalar(version, pa.string()), rows.num_rows),
        "match": pc.if_else(gone, pa.scalar(REMOVED), match),
        "overlap": pc.if_else(gone, pa.scalar(None, pa.float64()), overlap_col),
    }
    return pa.table(out, schema=REDIRECT_SCHEMA)


def compute_redirects(
    previous: pa.Table | None,
    current: pa.Table,
    *,
    dataset: str,
    partition_date: dt.date,
    chunking_version: str,
    previous_redirects: pa.Table | None = None,
    now: dt.datetime | None = None,
    threads: int | None = None,
) -> pa.Table:
    """The partition's redirect table after re-chunking ``previous`` into ``current``.

    ``previous`` / ``current`` are chunk tables of one partition (at least
    :data:`INPUT_COLUMNS`); ``previous_redirects`` is the partition's stored redirect
    table, which is merged in so every row points at an id of ``current`` (or is
    ``removed``), and rows for ids present again in ``current`` are dropped.
    ``chunking_version`` is the version that built ``current``. Rows are sorted by
    (doc_id, old_chunk_id), so the same inputs give the same table, whatever ``threads``
    (see :func:`match_vanished`).
    """
    now = now or dt.datetime.now(dt.UTC)
    fresh = _matches(previous, current, threads)
    n = fresh.num_rows
    table = pa.table({
        "dataset": pa.repeat(pa.scalar(dataset, pa.string()), n),
        "partition_date": pa.repeat(pa.scalar(partition_date, pa.date32()), n),
        **{name: fresh.column(name) for name in MATCH_COLUMNS[:6]},
        "new_chunking_version": pa.repeat(pa.scalar(chunking_version, pa.string()), n),
        "match": fresh.column("match"),
        "overlap": fresh.column("overlap"),
        "created_at": pa.repeat(pa.scalar(now, pa.timestamp("us", tz="UTC")), n),
    }, schema=REDIRECT_SCHEMA)
    carried = _carried(previous_redirects, current, fresh, chunking_version)
    if carried is not None:
        table = pa.concat_tables([table, carried])
    order = pc.sort_indices(table, sort_keys=[("doc_id", "ascending"), ("old_chunk_id", "ascending")])
    return table.take(order).combine_chunks()


def update_redirects(wh: Warehouse, dataset: str, day: dt.date, table: pa.Table, chunking_version: str) -> dict[str, int]:
    """Redirect the ids the day's last published chunks had and ``table`` lacks.

    Must run before the new chunks file replaces the old one: the old file (or, after a
    quarantine, the one set aside then) is the only record of the ids users may have
    stored. Writes ``redirects/<day>.parquet`` when there is something to say (or an
    earlier redirect file to bring up to date) and returns the row count by match kind.
    """
    published = wh.partitions(dataset, "chunks").get(day) or wh.partitions(dataset, LAST_PUBLISHED).get(day)
    stored = wh.partitions(dataset, "redirects").get(day)
    previous = None
    if published is not None:  # the daily rerun loses no id: read the ids alone to find out
        ids = pq.read_table(published, columns=["chunk_id"]).column("chunk_id")
        if not pc.all(_is_in(ids, table.column("chunk_id"))).as_py():
            previous = pq.read_table(published, columns=list(INPUT_COLUMNS))
    if previous is None and stored is None:
        return {}
    redirects = compute_redirects(
        previous,
        table,
        dataset=dataset,
        partition_date=day,
        chunking_version=chunking_version,
        previous_redirects=wh.read(dataset, "redirects", day) if stored else None,
        threads=wh.steps.redirect_threads,
    )
    if redirects.num_rows or stored:
        wh.write(redirects, dataset, "redirects", day)
    counts: dict[str, int] = {}
    for kind in redirects.column("match").to_pylist():
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))
