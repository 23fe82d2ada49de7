"""Which landing days are partitions, checked without Dagster.

The partitions are the days from the settings' ``partitions_start`` (default
2026-11-01) to yesterday, UTC: a day becomes a partition once it is over, the
rule of Dagster's ``DailyPartitionsDefinition`` that ``defs.partitions`` builds
from the same start. Checking a day here first lets the CLI answer a
bad argument with one line naming the valid range instead of a
``DagsterUnknownPartitionError`` traceback.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from codex_pipeline.settings import EnvName
from codex_pipeline.settings.codex import parse_iso_day

PARTITIONS_START_ENV = EnvName.PARTITIONS_START


class DayError(ValueError):
    """A day argument or setting that is not a partition; the message is one line."""


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
