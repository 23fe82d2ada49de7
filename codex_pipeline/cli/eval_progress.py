"""Progress lines for ``codex eval``'s materialization: one as each asset step starts and as it ends.

A real corpus takes minutes to chunk and embed; without these the command sat silent.
A Dagster logger sees every event of the run; this one writes only step start, success
and failure, with the step's elapsed time, to the stream it is given (stderr).
"""

from __future__ import annotations

import logging
import time
from typing import Any, TextIO

import dagster as dg

_SAID = {"STEP_START": "started", "STEP_SUCCESS": "done", "STEP_FAILURE": "failed"}


class _StepLines(logging.Handler):
    def __init__(self, out: TextIO) -> None:
        super().__init__(logging.DEBUG)
        self.out = out
        self.started: dict[str, float] = {}
        self.finished = 0

    def emit(self, record: logging.LogRecord) -> None:
        meta: Any = getattr(record, "dagster_meta", None)
        event = meta.get("dagster_event") if isinstance(meta, dict) else None
        kind = getattr(event, "event_type_value", None)
        step = getattr(event, "step_key", None)
        if kind not in _SAID or not step:
            return
        if kind == "STEP_START":
            self.started[step] = time.perf_counter()
            line = f"codex eval: {step} started"
        else:
            self.finished += 1
            took = time.perf_counter() - self.started.get(step, time.perf_counter())
            line = f"codex eval: {step} {_SAID[kind]} in {took:.1f}s ({self.finished} step(s) finished)"
        print(line, file=self.out, flush=True)


def progress_logger(out: TextIO) -> dg.LoggerDefinition:
    """A Dagster logger writing one line per asset step start and end to ``out``."""

    @dg.logger
    def progress(_context: dg.InitLoggerContext) -> logging.Logger:
        log = logging.Logger("codex-eval-progress", logging.DEBUG)
        log.addHandler(_StepLines(out))
        return log

    return progress
