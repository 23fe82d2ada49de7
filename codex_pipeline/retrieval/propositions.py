"""Search propositions (seed 002): each hit is a proposition, its spans, and its parent chunk as context.

Propositions are small and few next to chunks (a few per chunk, for the datasets
that opt in), so they are searched in memory: the current propositions of every
live document (the same ``documents.parquet`` rule as chunk search), their vectors
for the query embedder's model and version, and a BM25 over their text with the
chunk index's analyzer (:func:`~codex_pipeline.retrieval.lexical.analyze`). The
in-memory set is rebuilt when any of the files it was read from changes. Ranking is
that of :class:`~codex_pipeline.retrieval.retriever.Retriever`: cosine, BM25, or
both fused by reciprocal rank. A proposition without a vector (not embedded yet, or
by another model) is found by BM25 only.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codex_pipeline.embeddings import Embedder
from codex_pipeline.propositions.table import EMBEDDINGS_TABLE, TABLE, spans_of
from codex_pipeline.retrieval.lexical import analyze
from codex_pipeline.retrieval.types import Filters, SearchMode, Span
from codex_pipeline.warehouse.storage import Warehouse

RRF_K = 60
K1, B = 1.5, 0.75


@dataclass(frozen=True)
class PropositionHit:
    """One retrieved proposition. ``spans`` / ``evidence_text`` are the canonical-text ranges it rests on
    (empty when an LLM statement could not be aligned); the parent chunk is its context."""

    dataset: str
    proposition_id: str
    text: str
    score: float
    doc_id: str
    partition_date: dt.date
    spans: tuple[Span, ...]
    alignment_score: float | None
    evidence_text: tuple[str, ...]
    parent_chunk_id: str
    parent_chunk_type: str
    parent_text: str
    extractor: str
    ranks: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["partition_date"] = self.partition_date.isoformat()
        out["spans"] = [list(s) for s in self.spans]
        out["evidence_text"] = list(self.evidence_text)
        return out


@dataclass
class _Set:
    dataset: str
    rows: pa.Table  # current propositions, with parent_text / parent_chunk_type / canonical_text
    terms: list[dict[str, int]]  # term frequencies per row
    df: dict[str, int]
    lengths: np.ndarray
    vectors: np.ndarray | None  # [n, d], rows without a vector are zero
    has_vector: np.ndarray
    model: tuple[str, str] | None
    stamp: tuple[tuple[str, int, int], ...]


def proposition_datasets(wh: Warehouse) -> list[str]:
    base = wh.root / "warehouse"
    return sorted(p.parent.name for p in base.glob(f"*/{TABLE}") if any(p.glob("*.parquet"))) if base.is_dir() else []


def _files(wh: Warehouse, dataset: str) -> list[Path]:
    paths = [*wh.partitions(dataset, TABLE).values(), *wh.partitions(dataset, EMBEDDINGS_TABLE).values(),
             *wh.partitions(dataset, "chunks").values(), *wh.partitions(dataset, "raw").values()]
    doc_index = wh.documents_path(dataset)
    return paths + ([doc_index] if doc_index.exists() else [])


def _stamp(paths: list[Path]) -> tuple[tuple[str, int, int], ...]:
    out = []
    for p in paths:
        st = os.stat(p)
        out.append((str(p), st.st_mtime_ns, st.st_ino))
    return tuple(out)


def _read(paths: list[Path], columns: list[str]) -> pa.Table | None:
    tables = [pq.read_table(p, columns=columns) for p in paths]
    return pa.concat_tables(tables, promote_options="default") if tables else None


class PropositionSearch:
    """The propositions of the current corpus, held in memory per dataset and refreshed when files change."""

    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse = warehouse
        self._sets: dict[str, _Set] = {}

    def _load(self, dataset: str, model: tuple[str, str] | None) -> _Set | None:
        wh = self.warehouse
        paths = _files(wh, dataset)
        stamp = _stamp(paths)
        held = self._sets.get(dataset)
        if held is not None and held.stamp == stamp and held.model == model:
            return held
        props = _read(list(wh.partitions(dataset, TABLE).values()), [
            "proposition_id", "parent_chunk_id", "doc_id", "text", "spans", "alignment_score", "extractor", "partition_date"])
        if props is None or props.num_rows == 0:
            return None
        if wh.documents_path(dataset).exists():  # only each live document's current version
            docs = pq.read_table(wh.documents_path(dataset), columns=["doc_id", "partition_date", "deleted_on"])
            docs = docs.filter(pc.is_null(docs.column("deleted_on")))
            live = {(d, p) for d, p in zip(docs.column("doc_id").to_pylist(), docs.column("partition_date").to_pylist())}
            keep = [(d, p) in live for d, p in zip(props.column("doc_id").to_pylist(), props.column("partition_date").to_pylist())]
            props = props.filter(pa.array(keep, pa.bool_()))
        chunks = _read(list(wh.partitions(dataset, "chunks").values()), ["chunk_id", "partition_date", "chunk_text", "chunk_type"])
        raw = _read(list(wh.partitions(dataset, "raw").values()), ["doc_id", "partition_date", "canonical_text"])
        parent = {(c, p): (t, ty) for c, p, t, ty in zip(*(chunks.column(x).to_pylist() for x in chunks.column_names))} if chunks else {}
        canon = {(d, p): t for d, p, t in zip(*(raw.column(x).to_pylist() for x in raw.column_names))} if raw else {}
        keys = list(zip(props.column("parent_chunk_id").to_pylist(), props.column("partition_date").to_pylist()))
        docs_keys = list(zip(props.column("doc_id").to_pylist(), props.column("partition_date").to_pylist()))
        props = props.append_column("parent_text", pa.array([parent.get(k, ("", ""))[0] for k in keys], pa.large_string()))
        props = props.append_column("parent_chunk_type", pa.array([parent.get(k, ("", ""))[1] for k in keys], pa.string()))
        props = props.append_column("canonical_text", pa.array([canon.get(k, "") for k in docs_keys], pa.large_string()))
        terms = [_tf(analyze(t)) for t in props.column("text").to_pylist()]
        df: dict[str, int] = {}
        for tf in terms:
            for t in tf:
                df[t] = df.get(t, 0) + 1
        vectors, has = self._vectors(dataset, props, model)
        held = _Set(dataset, props, terms, df, np.array([sum(t.values()) for t in terms], np.float64), vectors, has, model, stamp)
        self._sets[dataset] = held
        return held

    def _vectors(self, dataset: str, props: pa.Table, model: tuple[str, str] | None) -> tuple[np.ndarray | None, np.ndarray]:
        has = np.zeros(props.num_rows, bool)
        if model is None:
            return None, has
        emb = _read(list(self.warehouse.partitions(dataset, EMBEDDINGS_TABLE).values()),
                    ["proposition_id", "partition_date", "embedding_model", "embedding_version", "vector"])
        if emb is None:
            return None, has
        emb = emb.filter(pc.and_(pc.equal(emb.column("embedding_model"), model[0]), pc.equal(emb.column("embedding_version"), model[1])))
        if emb.num_rows == 0:
            return None, has
        col = emb.column("vector").combine_chunks()
        mat = col.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, col.type.list_size)
        where = {k: i for i, k in enumerate(zip(emb.column("proposition_id").to_pylist(), emb.column("partition_date").to_pylist()))}
        out = np.zeros((props.num_rows, mat.shape[1]), np.float32)
        for row, k in enumerate(zip(props.column("proposition_id").to_pylist(), props.column("partition_date").to_pylist())):
            i = where.get(k)
            if i is not None:
                out[row], has[row] = mat[i], True
        return out, has

    def search(
        self,
        query: str,
        k: int,
        mode: SearchMode,
        filters: Filters,
        embedder: Callable[[], Embedder],
    ) -> list[PropositionHit]:
        """The ``k`` best current propositions of the datasets that have them (``filters.datasets`` narrows)."""
        names = [d for d in proposition_datasets(self.warehouse) if not filters.datasets or d in filters.datasets]
        if k <= 0 or not names or not query.strip():
            return []
        e = embedder() if mode is not SearchMode.BM25 else None
        model = (e.model, e.version) if e is not None else None
        qvec = np.asarray(e.embed([query]).vectors[0], np.float32) if e is not None else None
        qterms = analyze(query)
        lists: dict[str, list[tuple[float, str, int]]] = {"bm25": [], "vector": []}
        for name in names:
            held = self._load(name, model)
            if held is None:
                continue
            ok = self._mask(held, filters)
            if mode is not SearchMode.VECTOR:
                scores = _bm25(held, qterms)
                lists["bm25"] += [(float(scores[i]), name, int(i)) for i in np.flatnonzero(ok & (scores > 0))]
            if qvec is not None and held.vectors is not None:
                cos = held.vectors @ qvec
                lists["vector"] += [(float(cos[i]), name, int(i)) for i in np.flatnonzero(ok & held.has_vector)]
        scored: dict[tuple[str, int], float] = {}
        ranks: dict[tuple[str, int], dict[str, int]] = {}
        for kind, cands in lists.items():
            cands.sort(key=lambda c: (-c[0], c[1], c[2]))
            for rank, (score, name, row) in enumerate(cands[: max(k * 5, 50)], 1):
                ranks.setdefault((name, row), {})[kind] = rank
                add = 1.0 / (RRF_K + rank) if mode is SearchMode.HYBRID else score
                scored[(name, row)] = scored.get((name, row), 0.0) + add
        best = sorted(scored, key=lambda key: (-scored[key], key))[:k]
        return [self._hit(name, row, scored[(name, row)], ranks[(name, row)]) for name, row in best]

    @staticmethod
    def _mask(held: _Set, filters: Filters) -> np.ndarray:
        ok = np.ones(held.rows.num_rows, bool)
        days = held.rows.column("partition_date").to_pylist()
        if filters.date_from or filters.date_to:
            ok &= np.array([(not filters.date_from or d >= filters.date_from) and (not filters.date_to or d <= filters.date_to) for d in days])
        if filters.chunk_types:
            ok &= np.array([t in filters.chunk_types for t in held.rows.column("parent_chunk_type").to_pylist()])
        return ok

    def _hit(self, name: str, row: int, score: float, ranks: dict[str, int]) -> PropositionHit:
        r = self._sets[name].rows.slice(row, 1).to_pylist()[0]
        spans = spans_of(r["spans"]) or ()
        canonical = r["canonical_text"] or ""
        return PropositionHit(
            dataset=name, proposition_id=r["proposition_id"], text=r["text"], score=score, doc_id=r["doc_id"],
            partition_date=r["partition_date"], spans=spans, alignment_score=r["alignment_score"],
            evidence_text=tuple(canonical[s:e] for s, e in spans) if canonical else (),
            parent_chunk_id=r["parent_chunk_id"], parent_chunk_type=r["parent_chunk_type"], parent_text=r["parent_text"],
            extractor=r["extractor"], ranks=ranks,
        )


def _tf(terms: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in terms:
        out[t] = out.get(t, 0) + 1
    return out


def _bm25(held: _Set, query: list[str]) -> np.ndarray:
    """Lucene-variant BM25 (as the chunk index scores), over the in-memory set."""
    n = len(held.terms)
    scores = np.zeros(n)
    avg = float(held.lengths.mean()) if n else 0.0
    norm = K1 * (1 - B + B * held.lengths / (avg or 1.0))
    for t in set(query):
        df = held.df.get(t, 0)
        if not df:
            continue
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        tf = np.array([d.get(t, 0) for d in held.terms], np.float64)
        scores += idf * tf / (tf + norm)
    return scores


def print_proposition_hits(hits: list[PropositionHit], as_json: bool = False, preview: int = 240) -> int:
    """``codex search --units propositions`` output: one ``key=value`` line per hit, then evidence and parent."""
    import json

    if as_json:
        print(json.dumps([h.as_dict() for h in hits], ensure_ascii=False, indent=1))
        return 0
    for i, h in enumerate(hits, 1):
        ranks = ",".join(f"{k}:{v}" for k, v in sorted(h.ranks.items())) or "-"
        spans = "; ".join(f"[{s}:{e}]" for s, e in h.spans) or "unaligned"
        parent = " ".join(h.parent_text.split())
        print(f"score={h.score:.4f} rank={i} dataset={h.dataset} proposition_id={h.proposition_id} "
              f"parent_chunk_id={h.parent_chunk_id} doc_id={h.doc_id} partition_date={h.partition_date.isoformat()} "
              f"extractor={h.extractor} ranks={ranks}")
        print(f"    proposition: {h.text}")
        print(f"    evidence: {spans} alignment={h.alignment_score if h.alignment_score is not None else '-'}")
        print(f"    parent ({h.parent_chunk_type}): {parent[:preview]}{'…' if len(parent) > preview else ''}")
    if not hits:
        print("  (no propositions: materialize [dataset, propositions] for a dataset that opts in)")
    return 0
