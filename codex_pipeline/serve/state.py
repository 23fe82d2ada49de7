"""One Retriever for the whole process, kept current without making a request wait for a build.

The serving :class:`~codex_pipeline.retrieval.Retriever` never rebuilds (``rebuild=False``):
before each query it only ``stat``\\s each dataset's ``CURRENT`` pointer and reopens a version
another process made live, so requests see every materialization without a restart. Builds
happen elsewhere: in the pipeline's ``[dataset, search_index]`` asset, or (``rebuild=True``) in
this process's background thread, through the same :class:`~codex_pipeline.retrieval.freshness.IndexKeeper`
``codex search`` uses. While a build runs, the live (last good) version keeps answering; a
version that cannot be read leaves the one opened before it in service, with a warning.

A Retriever is not thread-safe, and FastAPI runs sync endpoints in a thread pool, so its
calls take :attr:`ServeState.lock` (a query holds the GIL for most of its time anyway).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from dataclasses import dataclass, field

from codex_pipeline.retrieval import Retriever
from codex_pipeline.retrieval.freshness import IndexKeeper
from codex_pipeline.retrieval.retriever import chunked_datasets
from codex_pipeline.serve.metrics import Metrics
from codex_pipeline.serve.settings import ServeSettings
from codex_pipeline.warehouse.storage import Warehouse

_log = logging.getLogger(__name__)


@dataclass
class ServeState:
    """What every request shares: the config, the warehouse, the Retriever and its lock, the metrics."""

    config: ServeSettings
    warehouse: Warehouse
    retriever: Retriever
    metrics: Metrics = field(default_factory=Metrics)
    lock: threading.Lock = field(default_factory=threading.Lock)
    build_warnings: dict[str, str] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @classmethod
    def open(cls, config: ServeSettings) -> ServeState:
        """Open every live index once (the query model loads on the first vector query, or now if injected)."""
        wh = Warehouse(config.data_dir)
        retriever = Retriever(wh.root, config.datasets or None, embedder=config.embedder,
                              embedder_kind=config.embedder_kind, rebuild=False)
        return cls(config, wh, retriever)

    def index_ages(self) -> dict[str, float]:
        """Seconds since each open index version was built."""
        now = dt.datetime.now(dt.UTC)
        with self.lock:
            manifests = {n: self.retriever.index(n).manifest for n in self.retriever.datasets}
        ages = {}
        for name, m in manifests.items():
            try:
                ages[name] = max(0.0, (now - dt.datetime.fromisoformat(m.built_at)).total_seconds())
            except ValueError:
                continue
        return ages

    def locate(self, chunk_id: str, datasets: list[str]) -> tuple[str, str] | None:
        """(dataset, doc_id) of a chunk the open indexes hold (a binary search each), or None."""
        with self.lock:
            for name in datasets:
                if name not in self.retriever.datasets:
                    continue
                index = self.retriever.index(name)
                row = index.row_of(chunk_id)
                if row is not None:
                    return name, str(index.row(row)["doc_id"])
        return None

    def datasets(self) -> list[str]:
        """The datasets the Retriever has an open index for, sorted."""
        with self.lock:
            return self.retriever.datasets

    def warnings(self) -> list[str]:
        """What a caller should know beyond one query's own warnings: builds in this process that failed."""
        return [self.build_warnings[n] for n in sorted(self.build_warnings)]

    # -- following new versions ---------------------------------------------------------

    def start(self) -> None:
        """Start the background thread that reopens (and, with ``rebuild``, rebuilds) indexes."""
        if self._thread is None and self.config.refresh_interval_s > 0:
            self._thread = threading.Thread(target=self._loop, name="codex-serve-refresh", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the background thread, waiting up to 30 s for a round in progress to end."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _loop(self) -> None:
        keeper = IndexKeeper(self.warehouse)
        while not self._stop.wait(self.config.refresh_interval_s):
            try:
                self.tick(keeper)
            except Exception:  # a refresh that fails must not end the thread: the last good index serves
                _log.exception("codex serve: refreshing the search indexes failed; the open versions keep serving")

    def tick(self, keeper: IndexKeeper | None = None) -> None:
        """One round: build stale indexes outside the lock (``rebuild``), then reopen new live versions under it."""
        if self.config.rebuild:
            keeper = keeper or IndexKeeper(self.warehouse)
            embedder = self.config.embedder
            wanted = (embedder.model, embedder.version) if embedder is not None else None
            for name in self.config.datasets or chunked_datasets(self.warehouse):
                started = time.perf_counter()
                try:
                    warning = keeper.check(name, wanted)
                except OSError as exc:
                    warning = f"{name}: the search index could not be rebuilt ({exc})"
                if warning:
                    self.build_warnings[name] = warning
                else:
                    self.build_warnings.pop(name, None)
                self.metrics.observe_build(name, time.perf_counter() - started)
        with self.lock:
            self.retriever.refresh()
