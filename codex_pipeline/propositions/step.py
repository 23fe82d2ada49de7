"""One partition's propositions from its contract-checked chunks, reusing every set it can.

A parent chunk's proposition set is reused when its ``content_hash``, the extractor,
the extractor's version and the prompt version are unchanged: found in this
partition's previous table or in any other partition of the dataset (a re-landed
document, a ``chunking_version`` bump that kept the text). Reused spans are moved
with the chunk (by the change of its first source offset) and checked against the
current canonical text; a set that no longer fits is re-extracted (offline) or
re-aligned (LLM: no new call). Only chunks found nowhere reach the extractor.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codex_pipeline.core.contract import REJECT_SCHEMA
from codex_pipeline.propositions.align import ChunkAligner
from codex_pipeline.propositions.base import JOIN, ChunkInput, Extractor, Span, Statement
from codex_pipeline.propositions.cost import Budget, CostMeter
from codex_pipeline.propositions.table import TABLE, PropositionRow, build_table, spans_of
from codex_pipeline.warehouse.storage import Warehouse

REJECT_STAGE = "propositions"
CacheKey = tuple[str, str, str, str]  # parent content_hash, extractor, version, prompt version


@dataclass
class PropositionCounts:
    """What a partition's extraction did. ``chunks == reused + extracted + rejected + deferred``."""

    chunks: int = 0
    reused: int = 0  # parent chunks whose set came from the cache
    extracted: int = 0  # parent chunks sent to the extractor and answered
    rejected: int = 0  # parent chunks whose output was unusable (codex.<ds>_rejects)
    deferred: int = 0  # parent chunks left for a later run by the cost cap
    propositions: int = 0
    unaligned: int = 0  # propositions whose spans are null
    requests: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """The counts by field name (``cost_usd`` a float, the rest ints)."""
        return asdict(self)


@dataclass
class PartitionPropositions:
    """What :func:`extract_day` built for one day: the table, its rejects (neither written yet) and the counts."""

    table: pa.Table
    rejects: pa.Table
    counts: PropositionCounts
    stopped: str | None = None  # the cost cap's message, when it stopped extraction


def chunk_inputs(chunks: pa.Table, raw: pa.Table) -> list[ChunkInput]:
    """Parent chunks with their source ranges and their document's canonical text."""
    texts = dict(zip(raw.column("doc_id").to_pylist(), raw.column("canonical_text").to_pylist()))
    out = []
    cols = [chunks.column(c).to_pylist() for c in ("chunk_id", "doc_id", "chunk_text", "content_hash", "evidence_anchor")]
    for chunk_id, doc_id, text, chash, anchor in zip(*cols):
        canonical = texts.get(doc_id)
        if canonical is None:
            raise ValueError(f"chunk {chunk_id}: its document {doc_id} is not in the raw partition; re-materialize raw and chunks")
        a = json.loads(anchor)
        sources = tuple((int(s), int(e)) for s, e in (a.get("spans") or [a["char_span"]]))
        out.append(ChunkInput(chunk_id, doc_id, text, chash, sources, canonical))
    return out


class PropositionCache:
    """``(content_hash, extractor, version, prompt) -> (parent_offset, [(text, spans, score, created_at)])``.

    A set's statements are in ordinal order.
    """

    def __init__(self) -> None:
        self._sets: dict[CacheKey, tuple[int, list[tuple[str, tuple[Span, ...] | None, float | None, dt.datetime]]]] = {}

    def __len__(self) -> int:
        return len(self._sets)

    def get(self, key: CacheKey) -> tuple[int, list[tuple[str, tuple[Span, ...] | None, float | None, dt.datetime]]] | None:
        """The cached set of ``key``, or None when no table added so far has it."""
        return self._sets.get(key)

    def add_table(self, table: pa.Table, hashes: set[str]) -> None:
        """Sets of a propositions table, for the given parent hashes only; the first one seen wins."""
        table = table.filter(pc.is_in(table.column("parent_content_hash"), value_set=pa.array(sorted(hashes), pa.string())))
        found: dict[tuple[CacheKey, str], tuple[int, list[tuple[int, str, tuple[Span, ...] | None, float | None, dt.datetime]]]] = {}
        cols = ("parent_content_hash", "extractor", "extractor_version", "prompt_version", "parent_chunk_id",
                "parent_offset", "ordinal", "text", "spans", "alignment_score", "created_at")
        for h, ex, ver, pv, parent, off, ordinal, text, spans, score, at in zip(*(table.column(c).to_pylist() for c in cols)):
            found.setdefault(((h, ex, ver, pv), parent), (off, []))[1].append((ordinal, text, spans_of(spans), score, at))
        for (key, _parent), (off, rows) in found.items():
            if key not in self._sets:
                self._sets[key] = (off, [(t, s, sc, at) for _, t, s, sc, at in sorted(rows, key=lambda r: r[0])])

    def add_files(self, paths: Iterable[Path], hashes: set[str]) -> None:
        """:meth:`add_table` for each Parquet file in turn, so the earlier files' sets win."""
        for path in paths:
            self.add_table(pq.read_table(path), hashes)


def _reuse(
    chunk: ChunkInput, cached: tuple[int, list[tuple[str, tuple[Span, ...] | None, float | None, dt.datetime]]], exact: bool
) -> list[tuple[Statement, dt.datetime]] | None:
    """The cached statements moved to the chunk's place, or None when they no longer fit its text."""
    old_offset, rows = cached
    delta = chunk.sources[0][0] - old_offset
    lo, hi = min(s for s, _ in chunk.sources), max(e for _, e in chunk.sources)
    out = []
    aligner: ChunkAligner | None = None
    for text, spans, score, at in rows:
        moved = None if spans is None else tuple((s + delta, e + delta) for s, e in spans)
        fits = moved is not None and all(lo <= s < e <= hi for s, e in moved)
        if exact and (not fits or moved is None or JOIN.join(chunk.canonical[s:e] for s, e in moved) != text):
            return None  # an offline set is its slices: re-extract (it costs no call)
        if not exact and moved is not None and not fits:
            aligner = aligner or ChunkAligner(chunk.canonical, chunk.sources)
            moved, score = aligner.align(text)
        out.append((Statement(text, moved, score), at))
    return out


def extract_day(
    wh: Warehouse,
    dataset: str,
    day: dt.date,
    extractor: Extractor,
    budget: Budget | None = None,
    now: dt.datetime | None = None,
) -> PartitionPropositions:
    """The ``<dataset>_propositions`` table of one day, and its rejects (not written here)."""
    try:
        chunks = wh.read(dataset, "chunks", day)
    except FileNotFoundError as exc:
        quarantined = wh.partition_path(dataset, "quarantine", day).exists()
        why = f" (the chunk contract failed: see codex.{dataset}_quarantine)" if quarantined else ""
        raise FileNotFoundError(f"{dataset} {day}: no contract-checked chunks to extract propositions from{why}") from exc
    raw = wh.read(dataset, "raw", day)
    inputs = chunk_inputs(chunks, raw)
    sources = dict(zip(raw.column("doc_id").to_pylist(), raw.column("source_file").to_pylist()))
    budget = budget or Budget([CostMeter(f"{dataset} {day}", None)])
    now = now or dt.datetime.now(dt.UTC)
    ident = (extractor.name, extractor.version, extractor.prompt_version)
    exact = extractor.name == "offline"

    cache = PropositionCache()
    hashes = {c.content_hash for c in inputs}
    existing = wh.partitions(dataset, TABLE)
    cache.add_files([existing[day]] if day in existing else [], hashes)  # this day's own first
    cache.add_files([p for d, p in sorted(existing.items(), reverse=True) if d != day], hashes)

    counts = PropositionCounts(chunks=len(inputs))
    statements: dict[str, list[tuple[Statement, dt.datetime]]] = {}
    missing: list[ChunkInput] = []
    for c in inputs:
        hit = cache.get((c.content_hash, *ident))
        reused = _reuse(c, hit, exact) if hit is not None else None
        if reused is None:
            missing.append(c)
        else:
            statements[c.chunk_id] = reused
            counts.reused += 1

    rejects: list[dict[str, object]] = []
    stopped = None
    if missing:
        result = extractor.extract(missing, budget)
        st = result.stats
        counts.requests, counts.retries = st.requests, st.retries
        counts.input_tokens, counts.output_tokens, counts.cost_usd = st.input_tokens, st.output_tokens, st.cost_usd
        stopped = st.stopped
        for c, ext in zip(missing, result.extractions):
            if ext.deferred:
                counts.deferred += 1
            elif ext.reject is not None:
                counts.rejected += 1
                rejects.append(
                    {
                        "dataset": dataset, "partition_date": day, "stage": REJECT_STAGE,
                        "source_file": sources.get(c.doc_id) or c.doc_id, "record_ref": c.chunk_id,
                        "reason": f"chunk {c.chunk_id}: {ext.reject}", "excerpt": c.text[:500], "rejected_at": now,
                    }
                )
            else:
                counts.extracted += 1
                statements[c.chunk_id] = [(s, now) for s in ext.statements]

    rows = []
    for c in inputs:
        for ordinal, (s, at) in enumerate(statements.get(c.chunk_id, [])):
            rows.append(PropositionRow(c.chunk_id, c.doc_id, ordinal, s, *ident, at, c.content_hash, c.sources[0][0]))
    table = build_table(rows, day)
    counts.propositions = table.num_rows
    counts.unaligned = table.column("spans").null_count
    return PartitionPropositions(table, pa.Table.from_pylist(rejects, schema=REJECT_SCHEMA), counts, stopped)
