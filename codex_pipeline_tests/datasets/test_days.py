"""Day arguments are checked against the same partitions Dagster builds, with one-line errors."""

from __future__ import annotations

import datetime as dt
import importlib

import dagster as dg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.datasets.days import (
    DEFAULT_PARTITIONS_START,
    PARTITIONS_START_ENV,
    DayError,
    check_day,
    check_days,
    partitions_start,
)

NOW = dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC)  # the latest partition is 2026-11-30


@settings(max_examples=60, deadline=None)
@given(
    start=st.dates(dt.date(2026, 1, 1), dt.date(2026, 11, 30)),
    day=st.dates(dt.date(2025, 12, 1), dt.date(2027, 1, 31)),
    hour=st.integers(0, 23),
)
def test_agrees_with_dagster_daily_partitions(start: dt.date, day: dt.date, hour: int) -> None:
    now = NOW.replace(hour=hour)
    keys = set(dg.DailyPartitionsDefinition(start_date=start.isoformat()).get_partition_keys(current_time=now))
    try:
        check_day(day.isoformat(), start=start, now=now)
        accepted = True
    except DayError:
        accepted = False
    assert accepted == (day.isoformat() in keys)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2030-01-01", "2030-01-01 is outside the partitions 2026-11-01..2026-11-30 "
                       "(a day becomes a partition once it is over, UTC)"),
        ("2026-12-01", "2026-12-01 is outside the partitions 2026-11-01..2026-11-30 "
                       "(a day becomes a partition once it is over, UTC)"),
        ("2026-10-31", "2026-10-31 is outside the partitions 2026-11-01..2026-11-30 "
                       f"(set {PARTITIONS_START_ENV} to widen)"),
        ("notadate", "'notadate' is not a date (YYYY-MM-DD)"),
        ("20261115", "'20261115' is not a date (YYYY-MM-DD)"),
        ("2026-11-31", "'2026-11-31' is not a date (YYYY-MM-DD)"),
    ],
)
def test_bad_days_get_one_line_naming_the_range(text: str, message: str) -> None:
    with pytest.raises(DayError) as info:
        check_day(text, start=DEFAULT_PARTITIONS_START, now=NOW)
    assert str(info.value) == message and "\n" not in str(info.value)


def test_valid_days_come_back_as_partition_keys() -> None:
    assert check_days([" 2026-11-01", "2026-11-30"], start=DEFAULT_PARTITIONS_START, now=NOW) == [
        "2026-11-01", "2026-11-30"]
    with pytest.raises(DayError, match="none yet"):
        check_day("2026-11-30", start=dt.date(2027, 1, 1), now=NOW)


def test_start_comes_from_the_environment() -> None:
    assert partitions_start({}) == DEFAULT_PARTITIONS_START == dt.date(2026, 11, 1)
    assert partitions_start({PARTITIONS_START_ENV: "2025-06-15"}) == dt.date(2025, 6, 15)
    for bad in ("2025/06/15", "June", "2025-6-15"):
        with pytest.raises(DayError) as info:
            partitions_start({PARTITIONS_START_ENV: bad})
        assert str(info.value) == f"{PARTITIONS_START_ENV}={bad!r} is not a date (expected YYYY-MM-DD)"


def test_dagster_partitions_follow_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    import codex_pipeline.defs.partitions as partitions

    try:
        monkeypatch.setenv(PARTITIONS_START_ENV, "2026-10-15")
        first = importlib.reload(partitions).daily_partitions.get_first_partition_key()
        assert first == "2026-10-15"
        monkeypatch.setenv(PARTITIONS_START_ENV, "15.10.2026")
        with pytest.raises(DayError, match=f"^{PARTITIONS_START_ENV}='15.10.2026' is not a date"):
            importlib.reload(partitions)
    finally:
        monkeypatch.delenv(PARTITIONS_START_ENV)
        assert importlib.reload(partitions).daily_partitions.get_first_partition_key() == "2026-11-01"
