"""How many input rows each landing file held, as its reader found them.

Row readers (CSV, JSON Lines, JSON arrays) call :func:`count_rows` once per file; the raw
step opens :func:`counting_rows` around a day's reading and then checks, file by file,
that every row read landed or was rejected by name. Outside that block counting is a
no-op, so ``codex sources check`` and tests call readers as before. A context variable
rather than a new return value: the count must pass through every dataset's loader
(validation, de-duplication, rendering) without each of them carrying it.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar


class Tally(dict[str, int]):
    """File -> rows read; ``merged`` and ``filtered``: file -> rows folded into another row / left out
    by a mapping's ``filters:`` (neither landed nor rejected, yet accounted for)."""

    def __init__(self) -> None:
        super().__init__()
        self.merged: Counter[str] = Counter()
        self.filtered: Counter[str] = Counter()


_TALLY: ContextVar[Tally | None] = ContextVar("row_tally", default=None)


@contextlib.contextmanager
def counting_rows() -> Iterator[Tally]:
    """Readers called inside record their files' row counts in the dict yielded (file -> rows read)."""
    tally = Tally()
    token = _TALLY.set(tally)
    try:
        yield tally
    finally:
        _TALLY.reset(token)


def count_rows(source_file: str, rows: int) -> None:
    """Record that ``source_file`` (relative to the landing day) held ``rows`` input rows."""
    tally = _TALLY.get()
    if tally is not None:
        tally[source_file] = rows


def count_merged(source_file: str, rows: int) -> None:
    """Record that ``rows`` rows of ``source_file`` were folded into another row with their id."""
    tally = _TALLY.get()
    if tally is not None and rows:
        tally.merged[source_file] += rows


def count_filtered(source_file: str, rows: int) -> None:
    """Record that ``rows`` rows of ``source_file`` were left out by the mapping's filters."""
    tally = _TALLY.get()
    if tally is not None and rows:
        tally.filtered[source_file] += rows


_MESSAGES: ContextVar[dict[str, list[int]] | None] = ContextVar("message_tally", default=None)


@contextlib.contextmanager
def counting_messages() -> Iterator[dict[str, list[int]]]:
    """Mail readers called inside record, per file, ``[messages read, messages threaded]`` in the dict yielded."""
    tally: dict[str, list[int]] = {}
    token = _MESSAGES.set(tally)
    try:
        yield tally
    finally:
        _MESSAGES.reset(token)


def count_messages(source_file: str, read: int = 0, threaded: int = 0) -> None:
    """Add to the messages ``source_file`` held (``read``) and those that went into a landed thread (``threaded``).

    The others must be rejects of that file (a reject that stands for no message has ``rows=0``).
    """
    tally = _MESSAGES.get()
    if tally is not None:
        got = tally.setdefault(source_file, [0, 0])
        got[0] += read
        got[1] += threaded
