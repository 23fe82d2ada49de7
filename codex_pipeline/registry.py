"""The one registry of datasets: each entry generates its Dagster assets.

Adding a dataset is one :class:`DatasetSpec` here plus its source reader and chunker
module; nothing in the Dagster layer names a dataset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .chunkers import Chunker
from .chunkers.narrative import chunk_narrative
from .documents import LoadResult
from .sources.narrative import load_narrative_day


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    description: str
    load_day: Callable[[Path], LoadResult]  # a landing day folder -> documents + rejects
    chunker: Chunker | None  # None: exported raw only, no `_chunks` table
    chunking_version: str  # bump when the chunker's output changes
    source_version: str = "1"  # bump when the reader's output changes

    @property
    def chunked(self) -> bool:
        return self.chunker is not None


DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec(
        name="narrative",
        description="Unstructured text and scraped HTML pages, chunked by the 600/550 token-window fallback.",
        load_day=load_narrative_day,
        chunker=chunk_narrative,
        chunking_version="1.0",
    ),
    # -- end of DATASETS: add new entries above this line --
)


def get_dataset(name: str) -> DatasetSpec:
    for spec in DATASETS:
        if spec.name == name:
            return spec
    raise KeyError(f"unknown dataset {name!r}; known: {', '.join(d.name for d in DATASETS)}")
