"""A Dagster instance that cannot write (a full disk under ``$DAGSTER_HOME``) as one line.

``codex materialize`` / ``codex demo`` record every run in the instance's storage. When
that disk is full, Dagster's SQLite raises from wherever it was writing (opening the
instance, creating the run, its first event) with some seventy lines of traceback, and
a run created before the failure stays NOT_STARTED. :class:`InstanceGuard` turns the
failure into one line naming ``$DAGSTER_HOME`` and the fix, after trying to mark this
process's unfinished runs failed; when even that cannot be written, the next
``codex materialize`` does it (``defs.run_hygiene.sweep_dead_runs``).
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from types import TracebackType
from typing import Any

from codex_pipeline.cli.errors import CliError

_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS}


def storage_cause(exc: BaseException) -> str | None:
    """The storage failure behind ``exc`` (a SQLite error, a full or failing disk), or None."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, sqlite3.Error) or (isinstance(e, OSError) and e.errno in _DISK_ERRNOS):
            return " ".join(str(e).split())[:120]
        e = e.__cause__ or e.__context__
    return None


def _free(path: str) -> str:
    try:
        return f"{shutil.disk_usage(path).free // 1024:,} KB free"
    except OSError:
        return "free space unknown"


def check_home(home: str | None) -> None:
    """A ``$DAGSTER_HOME`` Dagster will refuse, refused first as one line with the fix."""
    if not home:  # unset or empty: run_days uses a temporary instance
        return
    if not os.path.isabs(home):
        raise CliError(f"$DAGSTER_HOME={home!r} is not an absolute path: set it to one (or unset it for a temporary instance)")
    if not os.path.isdir(home):
        raise CliError(f"$DAGSTER_HOME={home!r} is not a directory: create it (mkdir -p {home}) or unset it "
                       "for a temporary instance")


class InstanceGuard:
    """``with InstanceGuard(home, day) as guard:`` around everything that writes the instance."""

    def __init__(self, home: str | None, day: str) -> None:
        self.home = home
        self.day = day
        self.instance: Any = None  # set once opened: the runs to close live there

    def __enter__(self) -> InstanceGuard:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if not isinstance(exc, Exception):
            return
        cause = storage_cause(exc)
        if cause is None:
            return
        where = self.home or "the temporary Dagster instance"
        raise CliError(
            f"cannot write the Dagster instance in {where} ({cause}; {_free(self.home) if self.home else 'temp dir'}): "
            f"free space there, then run `codex materialize {self.day}` again; {self._close(cause)}"
        ) from None

    def _close(self, cause: str) -> str:
        """Mark this process's unfinished runs failed; say what became of them."""
        if self.instance is None:
            return "no run was created"
        from codex_pipeline.defs.run_hygiene import fail_runs_of_this_process

        try:
            closed = fail_runs_of_this_process(self.instance, f"its instance storage failed ({cause})")
        except Exception:  # still cannot write: the next run's sweep closes them
            return "its unfinished run is marked failed by the next `codex materialize`"
        return f"run(s) {', '.join(r[:8] for r in closed)} marked failed" if closed else "no run was left open"
