"""The writers of a search index's files (:mod:`~codex_pipeline.retrieval.index_format`), and the error a failed
write raises.

:class:`BatchWriter` writes an Arrow IPC file in record batches of a fixed size (rows.arrow, docs.arrow),
:class:`UnitFile` a ``.npy`` file of f16 rows in place through a file map (units.npy), :func:`save_graph` the HNSW
graph (vectors.usearch). A write that fails raises :class:`IndexWriteError`, naming the file, the cause (a full disk
as such) and the fix.
"""

from __future__ import annotations

import errno
import mmap
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
from usearch.index import Index

from codex_pipeline.retrieval.index_format import BATCH_ROWS_KEY, NUM_ROWS_KEY


class BatchWriter:
    """An Arrow IPC file of record batches of exactly ``batch_rows`` rows (the last one shorter), so row ``i`` is
    in batch ``i // batch_rows`` and a reader fetches it with one read. The row count, when known ahead, goes in
    the schema metadata (readers count the batches otherwise)."""

    def __init__(self, path: Path, schema: pa.Schema, batch_rows: int, num_rows: int | None = None) -> None:
        meta = {**(schema.metadata or {}), BATCH_ROWS_KEY: str(batch_rows)}
        if num_rows is not None:
            meta[NUM_ROWS_KEY] = str(num_rows)
        self.schema = schema.with_metadata(meta)
        self.batch_rows = batch_rows
        self._sink = pa.OSFile(str(path), "wb")
        self._writer = pa.ipc.new_file(self._sink, self.schema)
        self._pending: list[pa.RecordBatch] = []
        self._held = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Queue ``batch`` (an empty one is skipped), writing batches of ``batch_rows`` as they fill; the
        remainder is written on a clean exit of the ``with`` block."""
        if batch.num_rows:
            self._pending.append(batch)
            self._held += batch.num_rows
            if self._held >= self.batch_rows:
                self._emit(final=False)

    def _emit(self, final: bool) -> None:
        if not self._pending:
            return
        table = pa.Table.from_batches(self._pending).combine_chunks()
        at = 0
        while self._held - at >= self.batch_rows or (final and self._held > at):
            part = table.slice(at, self.batch_rows).to_batches()[0]
            self._writer.write_batch(part.replace_schema_metadata(self.schema.metadata))
            at += part.num_rows
        rest = table.slice(at)
        self._pending, self._held = rest.to_batches(), rest.num_rows

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self._emit(final=True)
            self._writer.close()
        finally:
            self._sink.close()


class UnitFile:
    """A ``.npy`` file of f16 rows written at row indexes through ``mmap``, its pages released after each write."""

    def __init__(self, path: Path, rows: int, dims: int) -> None:
        header = np.lib.format.open_memmap(path, mode="w+", dtype=np.float16, shape=(rows, dims))  # sizes the file
        self.offset = header.offset
        del header
        self._fh = open(path, "r+b")
        self._map = mmap.mmap(self._fh.fileno(), 0)
        self.rows = np.frombuffer(self._map, np.float16, rows * dims, self.offset).reshape(rows, dims)

    def write(self, at: np.ndarray, vectors: np.ndarray) -> None:
        """Store ``vectors`` (cast to f16) at rows ``at``, then drop their pages from this process."""
        self.rows[at] = vectors
        self._map.flush()
        self._map.madvise(mmap.MADV_DONTNEED)  # written back: drop them from this process (the page cache keeps them)

    def close(self) -> None:
        """Unmap and close the file; every write was flushed when it was made."""
        del self.rows
        self._map.close()
        self._fh.close()


def save_graph(index: Index, path: Path) -> None:
    """``index.save`` with an error that says what went wrong: usearch reports a full disk as
    ``Failed to serialize into stream``, naming neither the file nor the cause."""
    try:
        index.save(str(path))
    except RuntimeError as exc:
        need = int(getattr(index, "serialized_length", 0) or 0)
        raise disk_error(path, need, f"usearch: {exc}") from exc


class IndexWriteError(OSError):
    """A write of the search index failed; the message names the file, the cause and the fix."""


def disk_error(path: Path, need: int, detail: str, full: bool | None = None) -> IndexWriteError:
    """An ``OSError`` naming ``path`` and the fix: "no space left on device" when the disk is (nearly) full.

    ``full`` None: full means less room than the file needs (or under 1 MiB), or a probe
    write of the same file failing with ``ENOSPC`` (usearch keeps the errno to itself).
    """
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        free = -1
    if full is None:
        full = 0 <= free <= max(need, 1 << 20) or _probe_errno(path) == errno.ENOSPC
    if full:
        return IndexWriteError(errno.ENOSPC, f"no space left on device writing {path} ({free:,} bytes free"
                       f"{f', about {need:,} needed' if need else ''}; {detail}): free space on that disk, or "
                       "move the data directory (CODEX_DATA_DIR) to a bigger one, then rematerialize the "
                       "dataset's search_index asset")
    return IndexWriteError(errno.EIO, f"could not write {path} ({detail}): check that the disk is writable and not "
                   "failing, then rematerialize the dataset's search_index asset")


def _probe_errno(path: Path) -> int | None:
    """The errno of writing 64 KiB to ``path`` (which a failed write left unusable anyway), None if it worked."""
    try:
        with open(path, "wb") as fh:
            fh.write(bytes(1 << 16))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        return exc.errno
    return None


def disk_full(exc: BaseException) -> bool:
    """A write that failed for want of space, whoever raised it (errno 28, or pyarrow's message of it)."""
    return isinstance(exc, OSError) and not isinstance(exc, IndexWriteError) \
        and (exc.errno == errno.ENOSPC or "No space left on device" in str(exc))
