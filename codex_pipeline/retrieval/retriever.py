"""The warm entry point: ``Retriever(data_dir).search(query, k, mode, filters)``.

A :class:`Retriever` opens each dataset's live index once (memory-mapped) and
loads the query embedder once, on the first query that needs it; afterwards a
query costs one embedding, one graph search and one sparse BM25 sum per dataset.

**Always current.** Before each query it checks whether a dataset's index still holds
what the warehouse holds (:mod:`~codex_pipeline.retrieval.freshness`): a landing whose
run did not rebuild the index, a proposition run, or another query embedder makes it
rebuild the index (incrementally) before answering; when another process is writing
that index, the live version answers and the results carry a warning
(:attr:`~codex_pipeline.retrieval.types.SearchResults.warnings`). A newer version made
live by another process is reopened: a long-running server sees every materialization
without a restart. ``rebuild=False`` only reopens.

**Only live documents, never a gap.** The index holds the current corpus as of its
build. A document retracted since (a tombstone landed, a snapshot left it out) is
dropped at query time too: every candidate's ``(doc_id, partition_date)`` is checked
against ``warehouse/<dataset>/index/documents.parquet``, re-read when that file
changes. A document re-landed since is *not* dropped: its indexed version is one of
its published landings (``landed_on``), and it answers until the index holds the new
version. The document index moves at a day's chunks step, the search index at its
search-index step, hours later or never if the run dies in embeddings; filtering on the
current version alone would hide the document for all that time.

Chunks and propositions (seed 002) are ranked by the same code
(:func:`~codex_pipeline.retrieval.ranking.rank`) over the two collections of one index.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from codex_pipeline.embeddings import Embedder, make_embedder
from codex_pipeline.embeddings.runtimes import LocalModelSettings
from codex_pipeline.retrieval.corpus import SEARCH_INDEX_DIR
from codex_pipeline.retrieval.corpus import index_root as index_root  # re-exported: where it used to live
from codex_pipeline.retrieval.freshness import IndexKeeper
from codex_pipeline.retrieval.hits import chunk_hit, cite_units
from codex_pipeline.retrieval.index_format import CURRENT_FILE
from codex_pipeline.retrieval.propositions import PropositionHit, proposition_hit
from codex_pipeline.retrieval.query import AnalyzedQuery
from codex_pipeline.retrieval.ranking import Ranked, Source, acceptor, rank
from codex_pipeline.retrieval.searcher import IndexOutdated, SearchIndex
from codex_pipeline.retrieval.settings import DEFAULT, RetrievalSettings
from codex_pipeline.retrieval.types import Filters, Hit, SearchMode, SearchResults
from codex_pipeline.retrieval.units import UnitVectors
from codex_pipeline.warehouse.storage import Warehouse


def indexed_datasets(wh: Warehouse) -> list[str]:
    """Datasets with a live search index, by name."""
    base = wh.root / "warehouse"
    return sorted(p.parent.parent.name for p in base.glob(f"*/{SEARCH_INDEX_DIR}/{CURRENT_FILE}")) if base.is_dir() else []


def chunked_datasets(wh: Warehouse) -> list[str]:
    """Datasets with chunk partitions (an index can be built for them)."""
    base = wh.root / "warehouse"
    return sorted(d.name for d in base.iterdir() if wh.has_files(d.name, "chunks")) if base.is_dir() else []


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

    ``datasets``: names to search (default: every dataset with an index or with chunks).
    ``embedder``: the query embedder (default: :func:`make_embedder` of ``embedder_kind``, which
    the caller reads from its configuration), created on the first vector or hybrid query.
    ``rebuild``: rebuild a stale index before searching it (default); False searches the
    indexes as they are.
    ``settings``: the parameters of ranking and citation (default: today's values,
    :data:`~codex_pipeline.retrieval.settings.DEFAULT`).
    """

    def __init__(
        self,
        data_dir: Path | str | None = None,
        datasets: Iterable[str] | None = None,
        *,
        embedder: Embedder | None = None,
        embedder_kind: str = "local",
        evidence_units: bool = True,
        rebuild: bool = True,
        settings: RetrievalSettings = DEFAULT,
    ) -> None:
        self.warehouse = Warehouse(data_dir)
        self.settings = settings
        self.evidence_units = evidence_units  # evidence is each hit's best unit (retrieval.units), in every mode
        self.rebuild = rebuild
        self._unit_vectors: UnitVectors | None = None
        self._names = list(datasets) if datasets else None
        self._embedder = embedder
        self._embedder_kind = embedder_kind
        self._open: dict[str, _Open] = {}
        self._keeper = IndexKeeper(self.warehouse)
        self.warnings: dict[str, str] = {}  # per dataset, from the last refresh
        self.skipped: dict[str, str] = {}  # datasets not searched (no usable index), and why
        self.refresh()

    @property
    def datasets(self) -> list[str]:
        """The datasets with an open index (those a search covers), sorted."""
        return sorted(self._open)

    @property
    def embedder(self) -> Embedder:
        """The query embedder: the one given, else :func:`make_embedder` of ``embedder_kind``, made on first use."""
        if self._embedder is None:
            # a search process embeds one short query at a time: one thread (see embeddings.runtimes.query_options)
            opts = {"options": LocalModelSettings(threads=1)} if self._embedder_kind == "local" else {}
            self._embedder = make_embedder(self._embedder_kind, **opts)
        return self._embedder

    def index(self, dataset: str) -> SearchIndex:
        """The open index of ``dataset`` (KeyError when it has none open)."""
        return self._open[dataset].index

    def with_settings(self, settings: RetrievalSettings) -> Retriever:
        """A retriever searching with ``settings``, sharing this one's open indexes, embedder and caches (for
        scoring candidate settings over one opened corpus, as ``eval/loco.py`` does); ``self`` is unchanged."""
        other = copy.copy(self)
        other.settings = settings
        return other

    # -- keeping current ----------------------------------------------------------------

    def refresh(self) -> None:
        """Rebuild stale indexes (when ``rebuild``), (re)open those whose live version changed, re-read live documents."""
        self.warnings, self.skipped = {}, {}
        names = self._names if self._names is not None else sorted(set(indexed_datasets(self.warehouse))
                                                                   | set(chunked_datasets(self.warehouse)))
        wanted = (self._embedder.model, self._embedder.version) if self._embedder is not None else None
        for name in names:
            self._refresh_one(name, wanted)

    def _refresh_one(self, name: str, wanted: tuple[str, str] | None) -> None:
        """Keep one dataset's index current and open; a missing or unreadable one is skipped with a warning."""
        root = index_root(self.warehouse, name)
        if self.rebuild:
            try:
                warning = self._keeper.check(name, wanted)
            except (OSError, pa.ArrowException) as exc:  # a full disk, a damaged partition: say so, keep serving
                warning = f"{name}: the search index could not be rebuilt ({_one_line(exc)})"
            if warning:
                self.warnings[name] = warning
        stamp = _stamp(root / CURRENT_FILE)
        held = self._open.get(name)
        if stamp is None and held is None:
            self._skip(name, f"{name} has no search index under {root}", "materialize the "
                       f"[{name}, search_index] asset (a search without --no-refresh builds it)", None)
            return
        if held is None or (stamp is not None and held.current_stamp != stamp):
            try:
                index = SearchIndex.open_live(root)
                if index is None:
                    raise FileNotFoundError(f"{root / CURRENT_FILE} names a version that is not there")
            except IndexOutdated:
                if self._names is not None:
                    raise
                self._skip(name, f"{name}'s search index under {root} is in another format", "rematerialize "
                           f"[{name}, search_index] (a search without --no-refresh rebuilds it)", None)
                return
            except (OSError, ValueError, RuntimeError, KeyError) as exc:  # damaged files: JSON, Arrow, usearch
                if held is None:
                    self._skip(name, f"{name}'s search index under {root} cannot be read ({_one_line(exc)})",
                               f"rematerialize [{name}, search_index]", exc)
                    return
                self.warnings[name] = (f"{name}: its new search index version cannot be read ({_one_line(exc)}); "
                                       "these hits come from the version opened before it")
            else:
                held = self._open[name] = _Open(index, stamp or (0, 0), None, None)
        self._refresh_live(name, held)

    def _skip(self, name: str, what: str, fix: str, cause: BaseException | None) -> None:
        """Leave ``name`` out of the search: an error when it was asked for by name, else a warning."""
        if self._names is not None:
            raise IndexMissing(f"{what}: {fix}") from cause
        self._open.pop(name, None)
        self.skipped[name] = f"{what}: its documents are not in these results; {fix}"

    def _refresh_live(self, name: str, held: _Open) -> None:
        path = self.warehouse.documents_path(name)
        stamp = _stamp(path)
        if stamp == held.live_stamp:
            return
        if stamp is None:
            held.live, held.live_stamp = None, None  # no document index: the index's own build is the truth
            return
        held.live, held.live_stamp = live_versions(path, one_per_document(held.index)), stamp

    # -- queries ------------------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int = 10,
        mode: SearchMode | str = SearchMode.HYBRID,
        filters: Filters | None = None,
    ) -> SearchResults[Hit]:
        """The ``k`` best chunks of the current corpus for ``query``."""
        mode, filters = SearchMode(mode), filters or Filters()
        names = self._searched(filters)
        if k <= 0 or not names or not query.strip():
            return self._results([], names, filters)
        q = AnalyzedQuery.of(query, self._query_vector(query, names) if mode is not SearchMode.BM25 else None)
        sources = [Source(n, self._open[n].index, self._open[n].live) for n in names]
        # at least the citation window is ranked and cited, so a hit's citation is the same whatever k asks for
        ranked = rank(q, sources, max(k, self.settings.cite_window), mode, filters, self.settings)
        indexes = [self._open[r.dataset].index for r in ranked]
        hits = [chunk_hit(r.dataset, index, r, q, self.settings) for r, index in zip(ranked, indexes)]
        if self.evidence_units:  # order kept: units pick evidence (by the query's words alone without a vector)
            hits = cite_units(hits, indexes, [r.row for r in ranked], q, self._units(), self.settings)
        return self._results(hits[:k], names, filters)

    def search_propositions(
        self, query: str, k: int = 10, mode: SearchMode | str = SearchMode.HYBRID, filters: Filters | None = None
    ) -> SearchResults[PropositionHit]:
        """The ``k`` best propositions (seed 002) of the current corpus, each with its spans and parent chunk.

        Ranked exactly as :meth:`search` ranks chunks; ``filters.chunk_types`` and ``filters.metadata`` apply to
        each proposition's parent chunk.
        """
        mode, filters = SearchMode(mode), filters or Filters()
        names = [n for n in self._searched(filters) if self._open[n].index.propositions is not None]
        if k <= 0 or not names or not query.strip():
            return self._results([], names, filters)
        q = AnalyzedQuery.of(query, self._query_vector(query, names) if mode is not SearchMode.BM25 else None)
        sources = [Source(n, self._propositions(n), self._open[n].live) for n in names]
        ranked = rank(q, sources, k, mode, filters, self.settings)
        return self._results([self._proposition_hit(r) for r in ranked], names, filters)

    def get(self, chunk_id: str, dataset: str | None = None) -> Hit | None:
        """The live chunk with this id (point lookup: a binary search per dataset), or None."""
        self.refresh()
        for name in [dataset] if dataset else self.datasets:
            held = self._open.get(name)
            if held is None:
                continue
            row = held.index.row_of(chunk_id)
            if row is not None and acceptor(held.index, held.live, Filters())(row):
                return chunk_hit(name, held.index, Ranked(name, row, 1.0, {}), None, self.settings)
        return None

    # -- helpers ------------------------------------------------------------------------

    def _searched(self, filters: Filters) -> list[str]:
        """Refresh, then the datasets ``filters`` asks for (all open ones by default)."""
        self.refresh()
        unknown = filters.datasets - set(self.datasets)
        if unknown:
            why = "; ".join(self.skipped[n] for n in sorted(unknown) if n in self.skipped)
            raise IndexMissing(why or f"no search index for {', '.join(sorted(unknown))}; "
                               f"indexed: {', '.join(self.datasets) or 'none'}")
        return [n for n in self.datasets if not filters.datasets or n in filters.datasets]

    def _results(self, hits: Iterable[Any], names: Sequence[str], filters: Filters) -> SearchResults[Any]:
        """``hits`` with the warnings of the datasets searched and of those skipped that the search wanted."""
        skipped = sorted(n for n in self.skipped if not filters.datasets or n in filters.datasets)
        return SearchResults(hits, [*self._warnings_for(names), *(self.skipped[n] for n in skipped)], skipped)

    def _warnings_for(self, names: Sequence[str]) -> list[str]:
        return [self.warnings[n] for n in sorted(self.warnings) if n in names or not names]

    def _propositions(self, name: str) -> SearchIndex:
        props = self._open[name].index.propositions
        assert props is not None
        return props

    def _proposition_hit(self, r: Ranked) -> PropositionHit:
        return proposition_hit(r.dataset, self._open[r.dataset].index, self._propositions(r.dataset), r.row, r.score,
                               r.ranks)

    def _units(self) -> UnitVectors:
        if self._unit_vectors is None:  # the embedder is reached only when a unit needs a vector (never in BM25 mode)
            self._unit_vectors = UnitVectors(lambda texts: self.embedder.embed(texts).vectors)
        return self._unit_vectors

    def _query_vector(self, query: str, names: Sequence[str]) -> np.ndarray | None:
        """The query's embedding by the indexes' model; None when no searched index holds vectors."""
        wanted = {(self._open[n].index.manifest.embedding_model, self._open[n].index.manifest.embedding_version) for n in names}
        wanted.discard((None, None))
        if not wanted:
            return None
        embedder = self.embedder
        if (embedder.model, embedder.version) not in wanted:
            have = ", ".join(f"{m} {v}" for m, v in sorted(wanted, key=str))
            raise ValueError(
                f"the query embedder is {embedder.model} {embedder.version}, the indexes hold {have}: "
                "query with the model the embeddings were made with, or use --mode bm25"
            )
        return np.asarray(embedder.embed([query]).vectors[0], np.float32)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def one_per_document(index: SearchIndex) -> bool:
    """Whether ``index`` was built from the current corpus (one version per document), not from every partition."""
    return index.manifest.source.get("current_corpus", "yes") == "yes"


def live_versions(documents: Path, any_landing: bool) -> frozenset[tuple[str, dt.date]]:
    """The ``(doc_id, day)`` versions a hit may come from: of every document not retracted, its current day or,
    with ``any_landing``, any day it landed on (published), so a re-landed document keeps answering from the
    version its index holds until the index is rebuilt."""
    docs = pq.read_table(documents, columns=["doc_id", "partition_date", "landed_on", "deleted_on"])
    docs = docs.filter(pc.is_null(docs.column("deleted_on")))
    if not any_landing:
        return frozenset(zip(docs.column("doc_id").to_pylist(), docs.column("partition_date").to_pylist()))
    landed = docs.column("landed_on").combine_chunks()
    ids = docs.column("doc_id").combine_chunks().take(pc.list_parent_indices(landed))
    return frozenset(zip(ids.to_pylist(), pc.list_flatten(landed).to_pylist()))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_ino
