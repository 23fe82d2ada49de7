"""How a deployment's steps use the machine: set once at the edge, carried by the :class:`Warehouse`.

The edge parses it from the environment (``codex_pipeline.settings``) and builds the
warehouse with it; the steps take it from the warehouse they are given, so no library
code reads the process environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
    day folder (off: such a link is a reject, so a landing folder cannot reach the rest of the disk)."""

    redirect_threads: int | None = None
    checkpoint: CheckpointSettings = field(default_factory=CheckpointSettings)
    follow_landing_links: bool = False

    def __post_init__(self) -> None:
        if self.redirect_threads is not None and self.redirect_threads < 1:
            raise ValueError(f"redirect_threads must be >= 1, got {self.redirect_threads}")
