"""The warm entry point: ``Retriever(data_dir).search(query, k, mode, filters)``.

A :class:`Retriever` opens each dataset's live index once (memory-mapped) and
loads the query embedder once, on the first query that needs it; afterwards a
query costs one embedding, one graph search and one sparse BM25 sum per dataset.
Before each query it checks (one ``stat`` per dataset) whether a newer index
version went live and, if so, reopens it: a long-running server sees every
materialization without a restart.

**Only live documents.** The index holds the current corpus as of its build. A
document retracted since (a tombstone landed, a newer day re-landed it) is
dropped at query time too: every candidate's ``(doc_id, partition_date)`` is
checked against ``warehouse/<dataset>/index/documents.parquet``, re-read when that
file changes. So a hit is never a superseded or deleted chunk, even between a
landing and the rebuild of the index.

**Fusion.** Each ranking takes the top ``max(k * 5, 50)`` candidates of every
dataset searched and merges them by score into one list (cosine is comparable
across datasets; BM25 nearly so: same analyzer, per-dataset IDF). Hybrid ranking
adds ``1 / (RRF_K + rank)`` per list (reciprocal rank fusion, ``RRF_K = 60`` as in
Cormack et al. and the LanceDB/Haystack defaults), with one refinement: a BM25
candidate scoring under :data:`LEXICAL_FLOOR` of the best BM25 score does not vote.
Without it, a query for a permit number lets every chunk sharing the number's
common parts (``bp2026``) vote, and a chunk that is 3rd in both lists beat the one
chunk holding the exact number. Measured on the sample permits and OSHA cases
(13 permit numbers, 8 statute citations as queries): plain RRF put the right chunk
first for 10 of 13 and 6 of 8; with the floor and whole-identifier terms
(:class:`~codex_pipeline.retrieval.lexical.QueryTerms`) the top hit holds the exact
number or citation for all 21.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codex_pipeline.embeddings import Embedder, make_embedder
from codex_pipeline.retrieval.context import anchor_spans, context, evidence
from codex_pipeline.retrieval.index import CURRENT_FILE
from codex_pipeline.retrieval.lexical import analyze_query
from codex_pipeline.retrieval.searcher import SearchIndex
from codex_pipeline.retrieval.types import Context, Filters, Hit, SearchMode, Span
from codex_pipeline.retrieval.units import UnitVectors, best_units, bridges
from codex_pipeline.warehouse.storage import Warehouse

SEARCH_INDEX_DIR = "search_index"
RRF_K = 60
CANDIDATES_MIN = 50
CANDIDATES_PER_K = 5
LEXICAL_FLOOR = 0.5
"""In hybrid mode a BM25 candidate votes only if it scores at least this share of the best BM25 score."""


def index_root(wh: Warehouse, dataset: str) -> Path:
    """``warehouse/<dataset>/search_index``."""
    return wh.table_dir(dataset, SEARCH_INDEX_DIR)


def indexed_datasets(wh: Warehouse) -> list[str]:
    """Datasets with a live search index, by name."""
    base = wh.root / "warehouse"
    return sorted(p.parent.parent.name for p in base.glob(f"*/{SEARCH_INDEX_DIR}/{CURRENT_FILE}")) if base.is_dir() else []


class IndexMissing(LookupError):
    """A dataset asked for has no search index yet (materialize its search_index asset)."""


@dataclass
class _Open:
    index: SearchIndex
    current_stamp: tuple[int, int]
    live: frozenset[tuple[str, dt.date]] | None
    live_stamp: tuple[int, int] | None


class Retriever:
    """Search the current corpus of one or more datasets.

    ``datasets``: names to search (default: every dataset with an index).
    ``embedder``: the query embedder (default: :func:`make_embedder` of ``embedder_kind``,
    i.e. ``$CODEX_EMBEDDER``), created on the first vector or hybrid query.
    """

    def __init__(
        self,
        data_dir: Path | str | None = None,
        datasets: Iterable[str] | None = None,
        *,
        embedder: Embedder | None = None,
        embedder_kind: str | None = None,
        evidence_units: bool = True,
    ) -> None:
        self.warehouse = Warehouse(data_dir)
        self.evidence_units = evidence_units  # vector/hybrid: evidence is each hit's best unit (retrieval.units)
        self._unit_vectors: UnitVectors | None = None
        self._names = list(datasets) if datasets else None
        self._embedder = embedder
        self._embedder_kind = embedder_kind
        self._open: dict[str, _Open] = {}
        self._propositions: Any = None  # retrieval.propositions.PropositionSearch, made on first use
        self.refresh()

    @property
    def datasets(self) -> list[str]:
        return sorted(self._open)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self._embedder_kind)
            _one_thread_per_query(self._embedder)
        return self._embedder

    def index(self, dataset: str) -> SearchIndex:
        return self._open[dataset].index

    # -- keeping current ----------------------------------------------------------------

    def refresh(self) -> None:
        """(Re)open indexes whose live version changed; pick up documents.parquet changes."""
        names = self._names if self._names is not None else indexed_datasets(self.warehouse)
        for name in names:
            root = index_root(self.warehouse, name)
            stamp = _stamp(root / CURRENT_FILE)
            if stamp is None:
                if self._names is not None:
                    raise IndexMissing(
                        f"{name} has no search index under {root}: materialize the [{name}, search_index] asset"
                    )
                continue
            held = self._open.get(name)
            if held is None or held.current_stamp != stamp:
                index = SearchIndex.open_live(root)
                if index is None:
                    continue
                held = self._open[name] = _Open(index, stamp, None, None)
            self._refresh_live(name, held)

    def _refresh_live(self, name: str, held: _Open) -> None:
        path = self.warehouse.documents_path(name)
        stamp = _stamp(path)
        if stamp == held.live_stamp:
            return
        if stamp is None:
            held.live, held.live_stamp = None, None  # no document index: the index's own build is the truth
            return
        docs = pq.read_table(path, columns=["doc_id", "partition_date", "deleted_on"])
        docs = docs.filter(pc.is_null(docs.column("deleted_on")))
        held.live = frozenset(zip(docs.column("doc_id").to_pylist(), docs.column("partition_date").to_pylist()))
        held.live_stamp = stamp

    # -- queries ------------------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int = 10,
        mode: SearchMode | str = SearchMode.HYBRID,
        filters: Filters | None = None,
    ) -> list[Hit]:
        """The ``k`` best chunks of the current corpus for ``query``."""
        mode = SearchMode(mode)
        filters = filters or Filters()
        self.refresh()
        names = [n for n in self.datasets if not filters.datasets or n in filters.datasets]
        unknown = filters.datasets - set(self.datasets)
        if unknown:
            raise IndexMissing(f"no search index for {', '.join(sorted(unknown))}; indexed: {', '.join(self.datasets) or 'none'}")
        if k <= 0 or not names or not query.strip():
            return []
        want = max(k * CANDIDATES_PER_K, CANDIDATES_MIN) if mode is SearchMode.HYBRID else k
        terms = analyze_query(query).resolve(_Vocabulary([self._open[n].index for n in names]))
        qvec = self._query_vector(query, names) if mode is not SearchMode.BM25 else None
        found: dict[str, list[tuple[float, str, int]]] = {"bm25": [], "vector": []}
        for name in names:
            held = self._open[name]
            mask = held.index.mask(filters)
            accept = self._acceptor(held, filters)
            if mode is not SearchMode.VECTOR:
                found["bm25"] += [(c.score, name, c.row) for c in held.index.bm25_candidates(terms, want, mask, accept)]
            if mode is not SearchMode.BM25 and qvec is not None:
                found["vector"] += [(c.score, name, c.row) for c in held.index.vector_candidates(qvec, want, mask, accept)]
        scored: dict[tuple[str, int], float] = {}
        ranks: dict[tuple[str, int], dict[str, int]] = {}
        for kind, cands in found.items():
            cands.sort(key=lambda c: (-c[0], c[1], c[2]))
            if kind == "bm25" and mode is SearchMode.HYBRID and cands:
                floor = LEXICAL_FLOOR * cands[0][0]
                cands = [c for c in cands if c[0] >= floor]
            for rank, (score, name, row) in enumerate(cands[:want], 1):
                key = (name, row)
                ranks.setdefault(key, {})[kind] = rank
                scored[key] = scored.get(key, 0.0) + 1.0 / (RRF_K + rank) if mode is SearchMode.HYBRID else score
        ordered = sorted(scored, key=lambda key: (-scored[key], key[0], key[1]))
        if qvec is not None and self.evidence_units:
            return self._unit_hits(ordered[:k], qvec, query, scored, ranks, k)  # order kept: units pick evidence
        best = ordered[:k]
        return [self._hit(name, row, scored[(name, row)], query, ranks[(name, row)]) for name, row in best]

    def _unit_hits(self, pool: list[tuple[str, int]], qvec: np.ndarray, query: str,
                   scored: dict[tuple[str, int], float], ranks: dict[tuple[str, int], dict[str, int]],
                   k: int) -> list[Hit]:
        """The hits of ``pool`` in their ranked order, each citing its best evidence unit (retrieval.units)."""
        if self._unit_vectors is None:
            embedder = self.embedder
            self._unit_vectors = UnitVectors(lambda texts: embedder.embed(texts).vectors)
        hits = [self._hit(name, row, scored[(name, row)], query, ranks[(name, row)]) for name, row in pool]
        indexes = [self._open[name].index for name, _ in pool]
        texts = [index.canonical_text(int(index.row(row)["doc_row"])) for index, (_, row) in zip(indexes, pool)]
        have = [i for i, t in enumerate(texts) if t is not None]
        found = best_units([(texts[i] or "", hits[i].spans, dict(hits[i].metadata), bridges(dict(hits[i].metadata)))
                            for i in have], qvec, self._unit_vectors, query,
                           stored=[indexes[i].stored_units(pool[i][1]) for i in have])
        unit = dict(zip(have, found))
        out = []
        for i in range(min(k, len(hits))):
            hit = hits[i]
            if i in unit and unit[i][0]:
                spans, text = unit[i][0], texts[i] or ""
                hit = dataclasses.replace(hit, evidence=spans, evidence_text=tuple(text[s:e] for s, e in spans))
            out.append(hit)
        return out

    def search_propositions(
        self, query: str, k: int = 10, mode: SearchMode | str = SearchMode.HYBRID, filters: Filters | None = None
    ) -> list[Any]:
        """The ``k`` best propositions (seed 002) of the current corpus, each with its spans and parent chunk.

        Returns :class:`~codex_pipeline.retrieval.propositions.PropositionHit`; ``filters.chunk_types`` applies
        to the parent chunk.
        """
        from codex_pipeline.retrieval.propositions import PropositionSearch

        if self._propositions is None:
            self._propositions = PropositionSearch(self.warehouse)
        return self._propositions.search(query, k, SearchMode(mode), filters or Filters(), lambda: self.embedder)

    def get(self, chunk_id: str, dataset: str | None = None) -> Hit | None:
        """The live chunk with this id (point lookup: a binary search per dataset), or None."""
        self.refresh()
        for name in [dataset] if dataset else self.datasets:
            held = self._open.get(name)
            if held is None:
                continue
            row = held.index.row_of(chunk_id)
            if row is not None and self._acceptor(held, Filters())(row):
                return self._hit(name, row, 1.0, "", {})
        return None

    # -- helpers ------------------------------------------------------------------------

    def _query_vector(self, query: str, names: Sequence[str]) -> np.ndarray | None:
        wanted = {(self._open[n].index.manifest.embedding_model, self._open[n].index.manifest.embedding_version) for n in names}
        wanted.discard((None, None))
        if not wanted:
            return None
        embedder = self.embedder
        if (embedder.model, embedder.version) not in wanted:
            have = ", ".join(f"{m} {v}" for m, v in sorted(wanted, key=str))
            raise ValueError(
                f"the query embedder is {embedder.model} {embedder.version}, the indexes hold {have}: "
                "query with the model the embeddings were made with (CODEX_EMBEDDER), or use --mode bm25"
            )
        return np.asarray(embedder.embed([query]).vectors[0], np.float32)

    def _acceptor(self, held: _Open, filters: Filters) -> Callable[[int], bool]:
        rows = held.index.rows
        live = held.live
        doc_col, day_col, meta_col = rows.column("doc_id"), rows.column("partition_date"), rows.column("metadata")
        wanted_meta = dict(filters.metadata)

        def accept(row: int) -> bool:
            if live is not None and (doc_col[row].as_py(), day_col[row].as_py()) not in live:
                return False
            if wanted_meta:
                raw = meta_col[row].as_py()
                meta = json.loads(raw) if raw else {}
                return all(meta.get(key) == value for key, value in wanted_meta.items())
            return True

        return accept

    def _hit(self, name: str, row: int, score: float, query: str, ranks: dict[str, int]) -> Hit:
        index = self._open[name].index
        r = index.row(row)
        text = index.canonical_text(int(r["doc_row"]))
        spans = anchor_spans(str(r["evidence_anchor"]))
        lo, hi = int(r["family_start"]), int(r["family_end"])
        chunk_text = str(r["chunk_text"])
        parent: str | None = r["parent_chunk_id"]
        ctx = Context("", "", parent, (0, 0), 0)
        evidence_spans: tuple[Span, ...] = spans
        evidence_text: tuple[str, ...] = ()
        if text is not None:  # else the document's text is missing from the index: cite the chunk only
            ctx = context(text, spans, (lo, hi) if lo >= 0 else None, parent)
            evidence_spans = evidence(query, text, spans, chunk_text)
            evidence_text = tuple(text[s:e] for s, e in evidence_spans)
        meta: dict[str, Any] = json.loads(str(r["metadata"])) if r["metadata"] else {}
        return Hit(
            dataset=name,
            doc_id=str(r["doc_id"]),
            chunk_id=str(r["chunk_id"]),
            chunk_type=str(r["chunk_type"]),
            score=float(score),
            spans=spans,
            text=chunk_text,
            locator=str(r["locator"]),
            partition_date=r["partition_date"],
            context=ctx,
            evidence=evidence_spans,
            evidence_text=evidence_text,
            section_id=str(r["section_id"]),
            parent_chunk_id=parent,
            metadata=meta,
            ranks=ranks,
        )


class _Vocabulary:
    """A term is known when any of the searched indexes holds it (one decision for all datasets)."""

    def __init__(self, indexes: Sequence[SearchIndex]) -> None:
        self.indexes = indexes

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and any(i.knows(term) for i in self.indexes)


def _one_thread_per_query(embedder: Embedder) -> None:
    """Run the local model single-threaded in a process that embeds only queries.

    A query is one short text: torch's intra-op threads only add synchronization.
    Measured on this 2-core machine under load: 84 ms per query on one thread, 1,371 ms
    on two. Applied only when the Retriever made the embedder itself (a search
    process); an embedder passed in is left as its owner configured it.
    """
    if not type(embedder).__module__.endswith("local_minilm"):
        return  # an API client: no local threads to tune
    import torch  # the local model loads it anyway

    torch.set_num_threads(1)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_ino
