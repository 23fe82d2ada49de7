"""Running one statement so that a time limit or Ctrl-C stops it, not only the end of the process.

DuckDB executes a statement in C++ with the GIL released; the Python thread that called it
sees neither a ``SIGINT`` nor a timer until the statement returns. So the statement runs in a
worker thread, and the calling thread waits on it: a timeout or a ``KeyboardInterrupt`` there
calls DuckDB's ``connection.interrupt()``, which makes the statement fail with
``InterruptException``, and that is reported as :class:`StatementStopped`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import duckdb

_POLL = 0.05
"""Seconds between interrupts while waiting for a stopped statement: an interrupt sent before DuckDB started is lost."""


class StatementStopped(Exception):
    """A statement stopped before it finished: by its time limit or by Ctrl-C (``by_user``)."""

    def __init__(self, message: str, *, by_user: bool) -> None:
        """``message`` is the one line printed; ``by_user`` tells Ctrl-C from the timeout."""
        super().__init__(message)
        self.by_user = by_user


@dataclass
class QueryResult:
    """The columns and rows of one statement (no columns: the statement returns no result)."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)


def run_bounded(
    con: duckdb.DuckDBPyConnection, statement: duckdb.Statement | str, timeout: float | None
) -> QueryResult:
    """Execute ``statement`` on ``con`` and fetch its rows; StatementStopped after ``timeout`` seconds or on Ctrl-C.

    DuckDB's own errors are raised as they are; the connection stays usable after a stop.
    """
    box: dict[str, Any] = {}
    done = threading.Event()  # not Thread.is_alive(): a join() that Ctrl-C interrupted can leave it False too early

    def work() -> None:
        try:
            cur = con.execute(statement)
            if cur.description:
                box["result"] = QueryResult([d[0] for d in cur.description], cur.fetchall())
            else:
                box["result"] = QueryResult()
        except BaseException as exc:  # handed to the waiting thread, which raises it
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="codex-query", daemon=True).start()
    try:
        done.wait(timeout)
    except KeyboardInterrupt:
        _stop(con, done)
        raise StatementStopped("stopped by Ctrl-C: the statement was interrupted", by_user=True) from None
    if not done.is_set():
        _stop(con, done)
        if isinstance(box.get("error"), duckdb.InterruptException) or not ("result" in box or "error" in box):
            raise StatementStopped(
                f"the statement ran past its {timeout:g}-second limit and was stopped; "
                "rerun with a larger --timeout SECONDS (or --timeout 0 for none), or narrow the query",
                by_user=False,
            )
    if "error" in box:
        raise box["error"]
    result: QueryResult = box["result"]
    return result


def _stop(con: duckdb.DuckDBPyConnection, done: threading.Event) -> None:
    """Interrupt until the statement has returned (a second Ctrl-C while waiting changes nothing)."""
    while not done.is_set():
        con.interrupt()
        try:
            done.wait(_POLL)
        except KeyboardInterrupt:
            continue
