"""Which landing days are partitions, checked without Dagster.

The partitions are the days from ``$CODEX_PARTITIONS_START`` (default
2026-11-01) to yesterday, UTC: a day becomes a partition once it is over, the
rule of Dagster's ``DailyPartitionsDefinition`` that ``defs.partitions`` builds
from :func:`partitions_start`, handed the environment by the edge. Checking a day here first lets the CLI answer a
bad argument with one line naming the valid range instead of a
``DagsterUnknownPartitionError`` traceback.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping

PARTITIONS_START_ENV = "CODEX_PARTITIONS_START"
DEFAULT_PARTITIONS_START = dt.date(2026, 11, 1)
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


class DayError(ValueError):
    """A day argument or setting that is not a partition; the message is one line."""


def parse_iso_day(text: str) -> dt.date | None:
    """``YYYY-MM-DD`` as a date, or None (``fromisoformat`` alone would also take ``20261101``)."""
    text = text.strip()
    if not _ISO_DAY.fullmatch(text):
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


def partitions_start(environ: Mapping[str, str]) -> dt.date:
    """The first partition: ``CODEX_PARTITIONS_START`` in ``environ`` if set, else 2026-11-01."""
    raw = environ.get(PARTITIONS_START_ENV, "").strip()
    if not raw:
        return DEFAULT_PARTITIONS_START
    day = parse_iso_day(raw)
    if day is None:
        raise DayError(f"{PARTITIONS_START_ENV}={raw!r} is not a date (expected YYYY-MM-DD)")
    return day


def last_partition(now: dt.datetime | None = None) -> dt.date:
    """Yesterday in UTC: the latest day that is over."""
    now = now or dt.datetime.now(dt.UTC)
    return now.astimezone(dt.UTC).date() - dt.timedelta(days=1)


def check_day(text: str, *, start: dt.date, now: dt.datetime | None = None) -> dt.date:
    """The partition day named by ``text`` (partitions from ``start``), or :class:`DayError` saying why it is not one."""
    day = parse_iso_day(text)
    if day is None:
        raise DayError(f"{text!r} is not a date (YYYY-MM-DD)")
    first = start
    last = last_partition(now)
    if last < first:
        raise DayError(
            f"{day} is not a partition: there are none yet ({PARTITIONS_START_ENV}={first} is after "
            f"yesterday, {last}, UTC)"
        )
    if day < first:
        raise DayError(f"{day} is outside the partitions {first}..{last} (set {PARTITIONS_START_ENV} to widen)")
    if day > last:
        raise DayError(
            f"{day} is outside the partitions {first}..{last} (a day becomes a partition once it is over, UTC)"
        )
    return day


def check_days(texts: Iterable[str], *, start: dt.date, now: dt.datetime | None = None) -> list[str]:
    """Every day argument checked (the first bad one raises), as ``YYYY-MM-DD`` partition keys."""
    return [check_day(t, start=start, now=now).isoformat() for t in texts]
