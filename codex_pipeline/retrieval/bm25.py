"""BM25 over a term-id table, built with numpy/scipy and queried from memory-mapped arrays.

Scores are bm25s's ``lucene`` variant (Kamphuis et al. 2020; bm25s's default, with
its default ``k1 = 1.5``, ``b = 0.75``)::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(d, t) = idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avg|d|))

precomputed per (term, chunk) into a CSC matrix, so a query sums a few columns.
The tests check every score against ``bm25s`` itself on the sample corpora.

**Why not ``bm25s.BM25.index``.** It takes every token as a Python object: several
times slower than the array build here, and its token lists alone would take several
GB at the corpus sizes the index serves (figures in ``docs/history.md``). Here the
whole build is array code, and each chunk's term ids are
kept with the index (:class:`TermTable`) so a rebuild analyzes only new or changed
chunks: the analyzer (pure Python regex + Snowball) is the one per-chunk cost left.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from codex_pipeline.warehouse.array_files import save_array

if TYPE_CHECKING:
    import scipy.sparse as sp

K1 = 1.5
B = 0.75
TERMS_FILE = "terms.json"
PHRASE_ROWS = 50_000
"""Rows holding every word of a phrase whose term lists are read to find it in order (a few MB of term ids at
most): an engineering bound; a phrase of only the commonest words is matched in the first rows that hold them all."""
REUSE_BATCH_ROWS = 65_536
"""Reused rows copied at a time (their positions are int64 per term: all at once, GBs at a year of partitions)."""


@dataclass
class TermTable:
    """Each row's analyzed terms as ids into ``terms``: ``term_ids[offsets[i]:offsets[i + 1]]``."""

    term_ids: np.ndarray  # int32, flat
    offsets: np.ndarray  # int64, rows + 1
    terms: list[str]

    @classmethod
    def build(
        cls,
        fresh: Iterable[tuple[int, Sequence[str]]],
        rows: int,
        previous: TermTable | None = None,
        reuse_rows: np.ndarray | None = None,
    ) -> TermTable:
        """Row ``i`` takes the terms ``fresh`` yields for it, else row ``reuse_rows[i]`` of ``previous``.

        ``fresh`` yields ``(row, terms)`` pairs and is consumed one row at a time, each
        turned into int32 ids at once: the analyzed strings of a whole corpus are never
        held together. The vocabulary only grows (``previous.terms`` is the prefix of
        the new one), so reused ids stay valid; reused rows are copied with one
        vectorized gather.
        """
        terms = list(previous.terms) if previous else []
        vocab = {t: i for i, t in enumerate(terms)}
        lengths = np.zeros(rows, np.int64)
        new_parts: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, their ids back to back), a few thousand rows each
        part_rows: list[int] = []
        part_ids: list[np.ndarray] = []
        for i, toks in fresh:
            ids = np.fromiter((vocab.setdefault(t, len(vocab)) for t in toks), np.int32, len(toks))
            part_rows.append(i)
            part_ids.append(ids)
            lengths[i] = len(ids)
            if len(part_rows) == 4096:
                new_parts.append((np.array(part_rows, np.int64), np.concatenate(part_ids)))
                part_rows, part_ids = [], []
        if part_rows:
            new_parts.append((np.array(part_rows, np.int64), np.concatenate(part_ids)))
        reused = np.zeros(rows, bool)
        if previous is not None and reuse_rows is not None:
            reused = reuse_rows >= 0
            src = reuse_rows[reused]
            lengths[reused] = previous.offsets[src + 1] - previous.offsets[src]
        offsets = np.zeros(rows + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        flat = np.empty(int(offsets[-1]), np.int32)
        if reused.any() and previous is not None and reuse_rows is not None:
            rows_reused = np.flatnonzero(reused)
            for at in range(0, len(rows_reused), REUSE_BATCH_ROWS):  # int64 temporaries per term: a batch at a time
                part = rows_reused[at:at + REUSE_BATCH_ROWS]
                flat[_spans(offsets[part], lengths[part])] = previous.term_ids[
                    _spans(previous.offsets[reuse_rows[part]], lengths[part])]
        for part, ids in new_parts:
            flat[_spans(offsets[part], lengths[part])] = ids
        terms.extend(list(vocab)[len(terms):])
        return cls(flat, offsets, terms)

    def __len__(self) -> int:
        return len(self.offsets) - 1


def _spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``start .. start + length`` of each pair, back to back (int64)."""
    return np.repeat(starts, lengths) + (np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths))


SCORE_BATCH_ROWS = 16_384
"""Rows turned into (term, row, tf) triples at a time while the score matrix is filled."""


def score_matrix(table: TermTable, k1: float = K1, b: float = B) -> sp.csc_matrix:
    """The (chunks x terms) BM25 score matrix, CSC: a column per term.

    Filled in two passes over row batches straight into the final ``indices`` /
    ``data`` arrays (8 bytes per distinct (chunk, term)): the first counts each
    term's documents, the second scatters each batch's scores to its terms' next
    free slots. Rows are visited in order, so each column's rows come out sorted.
    (Through scipy's COO -> CSR -> CSC conversions the build peaked at several
    times that: int64 coordinates, float64 temporaries and a copy per format.)
    """
    import scipy.sparse as sp  # on first use: 0.2 s of every import of the asset definitions

    n, vocab = len(table), max(len(table.terms), 1)
    lengths = np.diff(table.offsets)
    df = np.zeros(vocab, np.int64)
    for _, terms, _ in _batch_pairs(table):
        df += np.bincount(terms, minlength=vocab)
    indptr = np.zeros(vocab + 1, np.int64)
    np.cumsum(df, out=indptr[1:])
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    avg = float(lengths.mean()) if n else 1.0
    indices = np.empty(int(indptr[-1]), np.int32)
    data = np.empty(int(indptr[-1]), np.float32)
    cursor = indptr[:-1].copy()
    for rows, terms, tf in _batch_pairs(table):
        if not len(terms):  # a batch of rows without a word (only stopwords or punctuation)
            continue
        order = np.argsort(terms, kind="stable")  # by term, rows ascending within a term
        rows, terms, tf = rows[order], terms[order], tf[order]
        starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
        rank = np.arange(len(terms)) - np.repeat(starts, np.diff(np.r_[starts, len(terms)]))
        slot = cursor[terms] + rank
        norm = k1 * ((1 - b) + b * lengths[rows] / (avg or 1.0))
        indices[slot] = rows
        data[slot] = idf[terms] * tf / (tf + norm)
        np.add.at(cursor, terms[starts], np.diff(np.r_[starts, len(terms)]))
    return sp.csc_matrix((data, indices, indptr), shape=(n, vocab))


def _batch_pairs(table: TermTable) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per batch of rows: the distinct (row, term) pairs, ordered by row then term, and each pair's term frequency."""
    n, vocab = len(table), max(len(table.terms), 1)
    for r0 in range(0, n, SCORE_BATCH_ROWS):
        r1 = min(n, r0 + SCORE_BATCH_ROWS)
        s, e = int(table.offsets[r0]), int(table.offsets[r1])
        local = np.repeat(np.arange(r1 - r0, dtype=np.int64), np.diff(table.offsets[r0:r1 + 1]))
        codes, tf = np.unique(local * vocab + np.asarray(table.term_ids[s:e], np.int64), return_counts=True)
        yield (codes // vocab + r0).astype(np.int32), (codes % vocab).astype(np.int64), tf.astype(np.float32)


def save(folder: Path, table: TermTable, matrix: sp.csc_matrix) -> None:
    """Write ``table`` and its BM25 score ``matrix`` into ``folder`` (created if missing) as ``.npy`` arrays
    and the term list, the files :class:`Bm25` opens."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {  # astype without a copy: the matrix is already in these types (a copy was +260 MB at 730k chunks)
        "term_ids": table.term_ids,
        "offsets": table.offsets,
        "data": matrix.data.astype(np.float32, copy=False),
        "indices": matrix.indices.astype(np.int32, copy=False),
        "indptr": matrix.indptr.astype(np.int64, copy=False),
    }
    for name, arr in arrays.items():
        save_array(folder / f"{name}.npy", arr)  # a full disk names the file and the free bytes
    (folder / TERMS_FILE).write_text(json.dumps(table.terms, ensure_ascii=False))


class Bm25:
    """A saved BM25 matrix: the column pointers in memory, the columns read per query.

    A query reads the few columns it needs with ``pread`` (from the page cache once
    warm) instead of mapping the matrix: a mapped file's touched pages count in the
    process's RSS and, with Zipf-distributed terms, a few dozen queries touch most of
    it.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.indptr = np.load(folder / "indptr.npy")
        self.rows = len(np.load(folder / "offsets.npy", mmap_mode="r")) - 1
        self.vocab = {t: i for i, t in enumerate(json.loads((folder / TERMS_FILE).read_text()))}
        self._data = _NpyColumn(folder / "data.npy")
        self._indices = _NpyColumn(folder / "indices.npy")

    def term_table(self) -> TermTable:
        """The stored term ids (for a rebuild that reuses them)."""
        return TermTable(
            np.load(self.folder / "term_ids.npy", mmap_mode="r"),
            np.load(self.folder / "offsets.npy"),
            json.loads((self.folder / TERMS_FILE).read_text()),
        )

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """BM25 score of every row for ``terms`` (a repeated term counts again, as in bm25s)."""
        out = np.zeros(self.rows, np.float32)
        for t in terms:
            j = self.vocab.get(t)
            if j is None or j + 1 >= len(self.indptr):
                continue
            s, e = int(self.indptr[j]), int(self.indptr[j + 1])
            out[self._indices.read(s, e)] += self._data.read(s, e)  # row indices within one column are unique
        return out


    def rows_holding(self, sequence: Sequence[str]) -> np.ndarray:
        """Rows whose stored words hold ``sequence`` in order and side by side: the rows every word's column
        holds (the rarest first), then their term lists (of the first :data:`PHRASE_ROWS`) read back to back and
        the words' positions matched in one pass per word."""
        known = [self.vocab.get(t) for t in sequence]
        ids = [j for j in known if j is not None and j + 1 < len(self.indptr)]
        if not ids or len(ids) < len(known):  # a word no row holds: no row holds the phrase
            return np.empty(0, np.int64)
        rows: np.ndarray | None = None
        for j in sorted(set(ids), key=lambda j: int(self.indptr[j + 1] - self.indptr[j])):
            held = self._indices.read(int(self.indptr[j]), int(self.indptr[j + 1]))
            rows = held if rows is None else np.intersect1d(rows, held, assume_unique=True)
            if not len(rows):
                return np.empty(0, np.int64)
        assert rows is not None
        rows = np.sort(rows)[:PHRASE_ROWS]
        offsets = np.load(self.folder / "offsets.npy", mmap_mode="r")
        starts, lengths = np.asarray(offsets[rows]), np.asarray(offsets[rows + 1]) - np.asarray(offsets[rows])
        terms = np.load(self.folder / "term_ids.npy", mmap_mode="r")[_spans(starts, lengths)]  # the rows' lists, back to back
        owner = np.repeat(np.arange(len(rows)), lengths)
        at = np.flatnonzero(terms == ids[0])
        for i, j in enumerate(ids[1:], 1):  # keep the starts whose next words follow in the same row
            at = at[at + i < len(terms)]
            at = at[(terms[at + i] == j) & (owner[at + i] == owner[at])]
        return rows[np.unique(owner[at])].astype(np.int64)

    def coverage(self, terms: Sequence[str], row: int) -> float:
        """The IDF-weighted share of the distinct ``terms`` that ``row`` holds (0..1): how fully the row matches
        the query's words, rare ones counting most (``log(1 + N / df)``; a term no row of this dataset holds, e.g. one
        another searched dataset holds, counts as one every row holds: ``log 2``, as in ``units.lexical_shares``)."""
        held = total = 0.0
        for t in dict.fromkeys(terms):
            j = self.vocab.get(t)
            s, e = (int(self.indptr[j]), int(self.indptr[j + 1])) if j is not None and j + 1 < len(self.indptr) else (0, 0)
            idf = float(np.log1p(self.rows / (e - s))) if e > s else float(np.log(2.0))  # held nowhere: as lexical_shares
            total += idf
            if e > s and bool(np.any(self._indices.read(s, e) == row)):
                held += idf
        return held / total if total else 0.0


class _NpyColumn:
    """Slices of a 1-d ``.npy`` file read with ``pread``: nothing mapped, nothing kept."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as fh:
            major, _ = np.lib.format.read_magic(fh)
            header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            _, _, dtype = header(fh)
            self.offset = fh.tell()
        self.dtype = np.dtype(dtype)
        self.fd = os.open(path, os.O_RDONLY)

    def read(self, start: int, end: int) -> np.ndarray:
        size = self.dtype.itemsize
        buf = os.pread(self.fd, (end - start) * size, self.offset + start * size)
        return np.frombuffer(buf, self.dtype)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            os.close(self.fd)
