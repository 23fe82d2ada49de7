"""A reader keeps its indexes current: a stale index is rebuilt, or the last good one served with a warning.

Stale means the live version was not built from the warehouse files it would be built
from now (:func:`~codex_pipeline.retrieval.corpus.source_fingerprint`: a landing whose
run did not end with ``[dataset, search_index]``, a proposition run, a retraction), or
with another query embedder's vectors, or in an older index format. Checking costs
one ``stat`` per source table folder (an atomic partition write renames into it); the
fingerprint of every partition file is taken only when one of those changed.

When another process holds the dataset's build lock (a Dagster run writing the next
version) and a servable version is live, the reader does not wait: it answers from the
live version and says so. With no servable version it waits for that build.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from codex_pipeline.retrieval.corpus import (
    SOURCE_TABLES,
    IndexBusy,
    index_is_current,
    index_root,
    update_dataset_index,
)
from codex_pipeline.retrieval.index_format import CURRENT_FILE, read_manifest
from codex_pipeline.warehouse.storage import Warehouse

Embedding = tuple[str, str]
Stamp = tuple[tuple[int, int] | None, ...]


def inputs_stamp(wh: Warehouse, dataset: str) -> Stamp:
    """(mtime, inode) of each source table's folder and of the document index: changes with any partition write."""
    return tuple(_stat(p) for p in [*(wh.table_dir(dataset, t) for t in SOURCE_TABLES), wh.documents_path(dataset)])


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_ino


@dataclass
class IndexKeeper:
    """Rebuilds the stale indexes of one warehouse on behalf of a reader (see the module docstring)."""

    warehouse: Warehouse
    _checked: dict[str, tuple[Stamp, tuple[int, int] | None, Embedding | None]] = field(default_factory=dict)

    def check(self, dataset: str, embedding: Embedding | None) -> str | None:
        """Bring ``dataset``'s index up to date; returns a warning when the last good version must serve instead."""
        wh = self.warehouse
        inputs, pointer = inputs_stamp(wh, dataset), index_root(wh, dataset) / CURRENT_FILE
        if self._checked.get(dataset) == (inputs, _stat(pointer), embedding):
            return None
        if not wh.has_files(dataset, "chunks") or index_is_current(wh, dataset, embedding):
            self._checked[dataset] = (inputs, _stat(pointer), embedding)  # nothing to build from, or nothing changed
            return None
        live = read_manifest(index_root(wh, dataset))
        servable = live is not None and live.current_format
        model, version = embedding or ((live.embedding_model, live.embedding_version) if live else (None, None))
        try:
            update_dataset_index(wh, dataset, model, version, wait=not servable)
        except IndexBusy:
            assert live is not None
            return (f"{dataset}: the search index is being rebuilt by another process; these hits come from the "
                    f"last good version {live.version} (built {live.built_at})")
        except OSError as exc:
            if not servable or live is None:
                raise
            return (f"{dataset}: the search index is out of date and could not be rebuilt ({exc}); these hits come "
                    f"from the last good version {live.version} (built {live.built_at})")
        self._checked[dataset] = (inputs, _stat(pointer), embedding)  # the inputs as they were before the build
        return None
