"""Which chunks need a model call, and the embeddings table of a partition.

A stored vector is reused when the exact text sent to the model (its SHA-256, the
``input_hash``), the model and the version are unchanged. Lookups are by input
hash, not chunk id, so a vector follows its text: a ``chunking_version`` bump
that yields the same text, a chunk that moved to another partition or dataset,
or two chunks with identical text all cost no request.

Failure midway: every batch the embedder finishes goes to an
:class:`EmbeddingCheckpoint`, which writes what it holds as a small Parquet file
(atomically) every ``every_inputs`` vectors or every ``every_seconds``, whichever
comes first (:class:`CheckpointSettings`, default 4,096 inputs / 30 s; a deployment
sets it with ``$CODEX_EMBED_CHECKPOINT_INPUTS`` / ``_SECONDS``, read at the edge), and at
once when the embedder raises. A run killed outright (``kill -9``, OOM) so loses
at most about ``every_seconds`` of work; the rerun loads the saved vectors and
sends only what is still missing. The final table has exactly one row per
chunk, so nothing is lost or duplicated.

Typical use (what the Dagster asset does)::

    ckpt = EmbeddingCheckpoint(wh.root / "checkpoints" / dataset / "embeddings" / day, wh.steps.checkpoint)
    lookup = VectorLookup.from_files(other_embedding_files, model=e.model, version=e.version,
                                     hashes=input_hashes(chunks))
    out = embed_partition(chunks, e, previous=old_table, lookup=lookup, checkpoint=ckpt)
    warehouse.write(out.table, dataset, "embeddings", day)
    ckpt.clear()  # only after the partition is safely written
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import logging
import time
import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codex_pipeline.embeddings.base import Embedder, EmptyInput, InputTooLong
from codex_pipeline.warehouse.step_settings import CheckpointSettings
from codex_pipeline.warehouse.storage import write_parquet_atomic

log = logging.getLogger(__name__)

TEXT_COLUMN = "chunk_text"
_KEY_COLUMNS = ("input_hash", "embedding_model", "embedding_version")


def embeddings_schema(dimensions: int) -> pa.Schema:
    """The ``<dataset>_embeddings`` table: one row per chunk."""
    return pa.schema(
        [
            pa.field("chunk_id", pa.string(), nullable=False),
            pa.field("input_hash", pa.string(), nullable=False),  # sha256 of the exact model input
            pa.field("embedding_model", pa.string(), nullable=False),
            pa.field("embedding_version", pa.string(), nullable=False),
            pa.field("dimensions", pa.int32(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimensions), nullable=False),
            pa.field("embedded_at", pa.timestamp("us", tz="UTC"), nullable=False),
        ]
    )


def checkpoint_schema(dimensions: int) -> pa.Schema:
    """A checkpoint file: the embeddings schema keyed by input hash only."""
    return pa.schema([f for f in embeddings_schema(dimensions) if f.name != "chunk_id"])


def input_hash(text: str) -> str:
    """SHA-256 (hex) of the exact text sent to the model."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def input_hashes(chunks: pa.Table, text_column: str = TEXT_COLUMN) -> list[str]:
    """:func:`input_hash` of each row's ``text_column``, in row order."""
    return [input_hash(t) for t in chunks.column(text_column).to_pylist()]


def _now_us() -> int:
    return int(dt.datetime.now(dt.UTC).timestamp() * 1_000_000)


def _vectors(table: pa.Table) -> np.ndarray:
    """The ``vector`` column as a [n, d] float32 array (zero-copy where possible)."""
    col = table.column("vector").combine_chunks()
    d = col.type.list_size
    return col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(-1, d)


def _times_us(table: pa.Table) -> np.ndarray:
    if "embedded_at" not in table.column_names:
        return np.full(table.num_rows, _now_us(), np.int64)
    ts = table.column("embedded_at").cast(pa.timestamp("us", tz="UTC")).combine_chunks()
    return ts.cast(pa.int64()).to_numpy(zero_copy_only=False)


class VectorLookup:
    """``(input_hash, model, version) -> (vector, embedded_at µs)``, first entry wins."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str, str], tuple[np.ndarray, int]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, input_hash: str, model: str, version: str) -> tuple[np.ndarray, int] | None:
        """``(vector, embedded_at µs)`` stored for the key, or None."""
        return self._entries.get((input_hash, model, version))

    def add(self, input_hash: str, model: str, version: str, vector: np.ndarray, embedded_at_us: int) -> None:
        """Store a vector unless the key already has one (the first entry wins)."""
        self._entries.setdefault((input_hash, model, version), (vector, int(embedded_at_us)))

    def add_table(
        self,
        table: pa.Table,
        *,
        model: str | None = None,
        version: str | None = None,
        hashes: Collection[str] | None = None,
    ) -> int:
        """Add rows of an embeddings (or checkpoint) table, optionally only one model/version
        and only the given input hashes. Returns the number of rows considered."""
        missing = [c for c in (*_KEY_COLUMNS, "vector") if c not in table.column_names]
        if missing:
            raise ValueError(f"not an embeddings table: missing columns {missing}")
        mask = None
        if model is not None:
            mask = pc.equal(table.column("embedding_model"), model)
        if version is not None:
            m = pc.equal(table.column("embedding_version"), version)
            mask = m if mask is None else pc.and_(mask, m)
        if hashes is not None:
            m = pc.is_in(table.column("input_hash"), value_set=pa.array(list(set(hashes)), pa.string()))
            mask = m if mask is None else pc.and_(mask, m)
        if mask is not None:
            table = table.filter(mask)
        if table.num_rows == 0:
            return 0
        vecs = _vectors(table)
        times = _times_us(table)
        for i, (h, mo, ve) in enumerate(
            zip(*(table.column(c).to_pylist() for c in _KEY_COLUMNS))
        ):
            self._entries.setdefault((h, mo, ve), (vecs[i], int(times[i])))
        return table.num_rows

    def add_files(
        self, paths: Iterable[str | Path], *, model: str, version: str, hashes: Collection[str] | None = None
    ) -> int:
        """Add matching rows of Parquet embedding files (any partition, any dataset).

        Only rows of ``model``/``version`` (and of ``hashes``, if given) are read into
        memory; files of other shapes are skipped.
        """
        added = 0
        for path in paths:
            path = Path(path)
            try:
                schema = pq.read_schema(path)
            except (OSError, pa.ArrowInvalid) as exc:
                log.warning("skipping unreadable embeddings file %s: %s", path, exc)
                continue
            if any(c not in schema.names for c in (*_KEY_COLUMNS, "vector")):
                continue
            cols = [*_KEY_COLUMNS, "vector"] + (["embedded_at"] if "embedded_at" in schema.names else [])
            table = pq.read_table(
                path,
                columns=cols,
                filters=[("embedding_model", "=", model), ("embedding_version", "=", version)],
            )
            added += self.add_table(table, hashes=hashes)
        return added

    @classmethod
    def from_files(
        cls, paths: Iterable[str | Path], *, model: str, version: str, hashes: Collection[str] | None = None
    ) -> VectorLookup:
        """A lookup of the matching rows of ``paths`` (see :meth:`add_files`)."""
        lk = cls()
        lk.add_files(paths, model=model, version=version, hashes=hashes)
        return lk


class EmbeddingCheckpoint:
    """Vectors of a partition embedded so far, persisted as the run goes.

    A folder of ``part-*.parquet`` files (checkpoint schema), each written to a temp
    file and renamed, so a crash leaves either a whole file or nothing. :meth:`add`
    buffers vectors and writes them per ``policy`` (default: :class:`CheckpointSettings`'s defaults);
    :meth:`flush` writes the rest; :meth:`append` writes at once. Keep it outside the
    warehouse table folders (it is not a partition) and ``clear()`` it once the
    partition's table is written.
    """

    def __init__(
        self,
        directory: str | Path,
        policy: CheckpointSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.directory = Path(directory)
        self.policy = policy if policy is not None else CheckpointSettings()
        self._clock = clock
        self._pending: list[tuple[list[str], np.ndarray, str, str, int]] = []
        self._pending_rows = 0
        self._last_write = clock()

    def __repr__(self) -> str:
        return f"EmbeddingCheckpoint({str(self.directory)!r}, {self.policy})"

    @property
    def pending(self) -> int:
        """Vectors buffered but not yet on disk."""
        return self._pending_rows

    def add(self, hashes: list[str], vectors: np.ndarray, model: str, version: str, embedded_at_us: int) -> Path | None:
        """Buffer one finished batch; write the buffer if the policy says it is time."""
        if len(hashes):
            self._pending.append((list(hashes), vectors, model, version, embedded_at_us))
            self._pending_rows += len(hashes)
        due = self._pending_rows >= self.policy.every_inputs or (
            self._clock() - self._last_write >= self.policy.every_seconds
        )
        return self.flush() if due else None

    def flush(self) -> Path | None:
        """Write every buffered vector as one file (None when nothing was buffered)."""
        self._last_write = self._clock()
        if not self._pending:
            return None
        batches, self._pending, self._pending_rows = self._pending, [], 0
        by_key: dict[tuple[str, str], list[tuple[list[str], np.ndarray, int]]] = {}
        for hs, vecs, model, version, at in batches:
            by_key.setdefault((model, version), []).append((hs, vecs, at))
        path = None
        for (model, version), parts in by_key.items():
            path = self._write(
                [h for hs, _, _ in parts for h in hs],
                np.concatenate([v for _, v, _ in parts]),
                model,
                version,
                np.concatenate([np.full(len(hs), at, np.int64) for hs, _, at in parts]),
            )
        return path

    def files(self) -> list[Path]:
        """The part files on disk, by name; ``[]`` before the first write."""
        return sorted(self.directory.glob("part-*.parquet")) if self.directory.is_dir() else []

    def append(self, hashes: list[str], vectors: np.ndarray, model: str, version: str, embedded_at_us: int) -> Path:
        """Write one batch at once, whatever the policy."""
        return self._write(hashes, vectors, model, version, np.full(len(hashes), embedded_at_us, np.int64))

    def _write(self, hashes: list[str], vectors: np.ndarray, model: str, version: str, times_us: np.ndarray) -> Path:
        n, d = vectors.shape
        table = pa.Table.from_arrays(
            [
                pa.array(hashes, pa.string()),
                pa.array([model] * n, pa.string()),
                pa.array([version] * n, pa.string()),
                pa.array(np.full(n, d, np.int32)),
                pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(vectors, np.float32).ravel()), d),
                pa.array(times_us, pa.timestamp("us", tz="UTC")),
            ],
            schema=checkpoint_schema(d),
        )
        path = self.directory / f"part-{uuid.uuid4().hex}.parquet"
        write_parquet_atomic(table, path)
        return path

    def load_into(self, lookup: VectorLookup, *, model: str, version: str, hashes: Collection[str] | None = None) -> int:
        """Add the on-disk rows of ``model``/``version`` (and ``hashes``) to ``lookup``; returns the rows matched."""
        return lookup.add_files(self.files(), model=model, version=version, hashes=hashes)

    def rows(self) -> int:
        """Rows in the part files on disk (buffered vectors not counted)."""
        return sum(pq.ParquetFile(p).metadata.num_rows for p in self.files())

    def clear(self) -> None:
        """Drop the buffer, delete the part and temp files, and remove the folder if nothing else is in it."""
        self._pending, self._pending_rows = [], 0
        for p in self.files():
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        for p in self.directory.glob(".part-*.tmp") if self.directory.is_dir() else []:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        with contextlib.suppress(OSError):
            self.directory.rmdir()


@dataclass
class EmbedCounts:
    """What a partition's embedding cost. ``inputs == reused + embedded``."""

    inputs: int = 0  # chunk rows
    reused: int = 0  # rows whose vector was found (previous table, lookup, checkpoint, same text earlier)
    embedded: int = 0  # rows whose vector was computed in this run
    requests: int = 0  # API requests (incl. retried ones) / local model batches
    sent: int = 0  # distinct texts sent to the model
    recovered: int = 0  # rows served from the checkpoint of an earlier failed run
    retries: int = 0
    tokens: int = 0
    long_inputs: int = 0
    windows: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counts by field name, for run metadata."""
        return asdict(self)


@dataclass
class EmbeddingPlan:
    """What a partition needs, decided without calling any model."""

    model: str
    version: str
    chunk_ids: list[str]
    texts: list[str]
    hashes: list[str]
    found: dict[str, tuple[np.ndarray, int]] = field(default_factory=dict)  # input hash -> stored vector
    recovered: set[str] = field(default_factory=set)  # hashes found in the checkpoint
    missing: list[str] = field(default_factory=list)  # distinct input hashes to embed, first-seen order

    @property
    def missing_rows(self) -> int:
        """Chunk rows whose input is to be embedded (a text on several rows counts for each)."""
        m = set(self.missing)
        return sum(1 for h in self.hashes if h in m)

    @property
    def up_to_date(self) -> bool:
        """Every input already has a stored vector: the model need not be called."""
        return not self.missing


def _chunk_columns(chunks: pa.Table, text_column: str) -> tuple[list[str], list[str]]:
    for c in ("chunk_id", text_column):
        if c not in chunks.column_names:
            raise ValueError(f"chunks table has no {c!r} column")
    ids = chunks.column("chunk_id").to_pylist()
    texts = chunks.column(text_column).to_pylist()
    if len(set(ids)) != len(ids):
        raise ValueError("chunks table has duplicate chunk_id values; embeddings are one row per chunk")
    if any(t is None for t in texts):
        raise ValueError(f"chunks table has null {text_column!r} values")
    return ids, texts


def plan_embeddings(
    chunks: pa.Table,
    model: str,
    version: str,
    *,
    previous: pa.Table | None = None,
    lookup: VectorLookup | None = None,
    checkpoint: EmbeddingCheckpoint | None = None,
    dimensions: int | None = None,
    text_column: str = TEXT_COLUMN,
) -> EmbeddingPlan:
    """Decide which inputs need the model (cheap enough for a sensor or a check)."""
    ids, texts = _chunk_columns(chunks, text_column)
    hashes = [input_hash(t) for t in texts]
    need = set(hashes)
    local = VectorLookup()
    if previous is not None and previous.num_rows:
        local.add_table(previous, model=model, version=version, hashes=need)
    plan = EmbeddingPlan(model, version, ids, texts, hashes)
    ck = VectorLookup()
    if checkpoint is not None:
        checkpoint.load_into(ck, model=model, version=version, hashes=need)
    seen: set[str] = set()
    for h in hashes:
        if h in seen:
            continue
        seen.add(h)
        hit = local.get(h, model, version) or (lookup.get(h, model, version) if lookup is not None else None)
        if hit is None:
            hit = ck.get(h, model, version)
            if hit is not None:
                plan.recovered.add(h)
        if hit is not None and (dimensions is None or hit[0].shape == (dimensions,)):
            plan.found[h] = hit
        else:
            plan.recovered.discard(h)
            plan.missing.append(h)
    return plan


@dataclass
class EmbedOutcome:
    """What :func:`embed_partition` returns: the embeddings table, rows in the chunks' order, and its cost."""

    table: pa.Table  # embeddings_schema(d), rows in the chunks' order
    counts: EmbedCounts


def embed_partition(
    chunks: pa.Table,
    embedder: Embedder,
    *,
    previous: pa.Table | None = None,
    lookup: VectorLookup | None = None,
    checkpoint: EmbeddingCheckpoint | None = None,
    text_column: str = TEXT_COLUMN,
    now: dt.datetime | None = None,
) -> EmbedOutcome:
    """The embeddings table for ``chunks``, calling ``embedder`` only for missing inputs.

    ``previous``: this partition's existing embeddings table; ``lookup``: vectors
    from anywhere else; ``checkpoint``: where finished batches are persisted (and
    recovered from, after an earlier failure). On failure the embedder's error is
    re-raised with a note saying how much was saved.
    """
    model, version, d = embedder.model, embedder.version, embedder.dimensions
    plan = plan_embeddings(
        chunks, model, version, previous=previous, lookup=lookup, checkpoint=checkpoint, dimensions=d,
        text_column=text_column,
    )
    counts = EmbedCounts(inputs=len(plan.hashes))
    fresh: dict[str, tuple[np.ndarray, int]] = {}
    if plan.missing:
        first_row: dict[str, int] = {}
        for row, h in enumerate(plan.hashes):
            first_row.setdefault(h, row)
        missing_texts = [plan.texts[first_row[h]] for h in plan.missing]
        fixed_time = int(now.timestamp() * 1_000_000) if now is not None else None

        def on_batch(idx: np.ndarray, vecs: np.ndarray) -> None:
            at = fixed_time if fixed_time is not None else _now_us()
            hs = [plan.missing[int(i)] for i in idx]
            if checkpoint is not None:
                checkpoint.add(hs, vecs, model, version, at)
            for h, v in zip(hs, vecs):
                fresh[h] = (v, at)

        try:
            try:
                result = embedder.embed(missing_texts, on_batch=on_batch)
            finally:  # on success too: the vectors are on disk until the table is written
                if checkpoint is not None:
                    checkpoint.flush()
        except (InputTooLong, EmptyInput) as exc:
            exc.add_note(f"input {exc.index} is chunk {plan.chunk_ids[first_row[plan.missing[exc.index]]]}")
            raise
        except Exception as exc:
            done = len(fresh)
            if checkpoint is not None:
                exc.add_note(
                    f"{done} vectors embedded before the failure are saved in {checkpoint.directory}; "
                    f"a rerun embeds only the {len(plan.missing) - done} inputs still missing"
                )
            else:
                exc.add_note(f"no checkpoint was given: the {done} vectors embedded before the failure are lost")
            raise
        if len(fresh) != len(plan.missing):  # an embedder that skipped on_batch for some rows
            for i, h in enumerate(plan.missing):
                fresh.setdefault(h, (result.vectors[i], fixed_time or _now_us()))
        counts.requests = result.requests
        counts.retries = result.retries
        counts.tokens = result.tokens
        counts.long_inputs = result.long_inputs
        counts.windows = result.windows
        counts.sent = len(plan.missing)

    n = len(plan.hashes)
    vectors = np.empty((n, d), np.float32)
    times = np.empty(n, np.int64)
    for row, h in enumerate(plan.hashes):
        hit = fresh.get(h)
        if hit is not None:
            counts.embedded += 1
        else:
            hit = plan.found[h]
            counts.reused += 1
            if h in plan.recovered:
                counts.recovered += 1
        vectors[row], times[row] = hit
    table = pa.Table.from_arrays(
        [
            pa.array(plan.chunk_ids, pa.string()),
            pa.array(plan.hashes, pa.string()),
            pa.array([model] * n, pa.string()),
            pa.array([version] * n, pa.string()),
            pa.array(np.full(n, d, np.int32)),
            pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), d),
            pa.array(times, pa.timestamp("us", tz="UTC")),
        ],
        schema=embeddings_schema(d),
    )
    if plan.missing or counts.recovered:
        log.info(
            "embedded %d of %d chunks with %s (%d reused, %d recovered, %d requests)",
            counts.embedded, counts.inputs, model, counts.reused, counts.recovered, counts.requests,
        )
    return EmbedOutcome(table, counts)
