"""How a deployment's steps use the machine: set once at the edge, carried by the :class:`Warehouse`.

The edge parses it from the environment (``codex_pipeline.settings``) and builds the
warehouse with it; the steps take it from the warehouse they are given, so no library
code reads the process environment.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

SIZE = re.compile(r"^\d+(?:\.\d+)?\s*(?:[KMGT]i?B|B)$", re.IGNORECASE)
"""A size DuckDB reads (``512MB``, ``2GiB``): anything else it would misread or refuse at the first query."""
_MIB = 2**20
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
BUILD_MEMORY_SHARE = 8
"""A build's DuckDB takes an eighth of the machine: the build's own arrays (graph, terms) and the
process serving searches beside it need the rest."""
BUILD_MEMORY_BOUNDS = (256 * _MIB, 4096 * _MIB)


def size_bytes(size: str) -> int:
    """The bytes a :data:`SIZE` stands for, as DuckDB reads it (``KB`` = 1,000, ``KiB`` = 1,024)."""
    text = size.strip().lower()
    number = text.rstrip("kmgtib ")
    return int(float(number) * _UNITS[text[len(number):].strip()])


def machine_memory() -> int | None:
    """Bytes this process may use: the physical memory, or its cgroup's limit when lower (a container)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    for limit in (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")):
        try:
            text = limit.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


@dataclass(frozen=True)
class CheckpointSettings:
    """When buffered vectors are written: after ``every_inputs`` of them or ``every_seconds``
    since the last write, whichever comes first.

    Count alone is not enough: a slow model (a loaded CPU, a throttled API) could run
    for half an hour before 4,096 inputs are done, and a killed run would have saved
    nothing. Time is checked when a batch finishes, so a write lags by at most one batch.
    """

    every_inputs: int = 4096
    every_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.every_inputs < 1 or not self.every_seconds >= 0:
            raise ValueError(f"checkpoint every_inputs must be >= 1 and every_seconds >= 0, got {self}")


@dataclass(frozen=True)
class StepSettings:
    """``redirect_threads``: threads of the redirect step's word-set batches (None: the cores this
    process may run on, at most four; a site running one worker per core sets 1).
    ``checkpoint``: how often embedding progress is saved.
    ``follow_landing_links``: ingest a landing file that is a symlink to a file outside its landing
    day folder (off: such a link is a reject, so a landing folder cannot reach the rest of the disk).
    ``build_memory_limit``: DuckDB's memory in a search-index build (its sort of the chunk rows spills
    to disk beyond it); None: :meth:`build_memory` derives it from the machine."""

    redirect_threads: int | None = None
    checkpoint: CheckpointSettings = field(default_factory=CheckpointSettings)
    follow_landing_links: bool = False
    build_memory_limit: str | None = None

    def __post_init__(self) -> None:
        if self.redirect_threads is not None and self.redirect_threads < 1:
            raise ValueError(f"redirect_threads must be >= 1, got {self.redirect_threads}")
        if self.build_memory_limit is not None and not SIZE.match(self.build_memory_limit.strip()):
            raise ValueError(f"build memory limit {self.build_memory_limit!r} is not a size: "
                             "give a number and a unit, e.g. 1GB or 512MiB")

    def build_memory(self) -> str:
        """The build's DuckDB memory limit: the setting, else an eighth of the machine within 256 MiB–4 GiB."""
        if self.build_memory_limit is not None:
            return self.build_memory_limit.strip()
        low, high = BUILD_MEMORY_BOUNDS
        share = (machine_memory() or 0) // BUILD_MEMORY_SHARE
        return f"{min(max(share, low), high) // _MIB}MiB"
