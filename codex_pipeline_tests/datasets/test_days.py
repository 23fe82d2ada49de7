"""Day arguments are checked against the same partitions Dagster builds, with one-line errors."""

from __future__ import annotations

import datetime as dt

import dagster as dg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.datasets.days import PARTITIONS_START_ENV, DayError, check_day, check_days
from codex_pipeline.settings import CodexSettings, SettingsError
from codex_pipeline.settings.codex import DEFAULT_PARTITIONS_START

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


def test_start_comes_from_the_settings() -> None:
    assert CodexSettings.from_env({}).partitions_start == DEFAULT_PARTITIONS_START == dt.date(2026, 11, 1)
    assert CodexSettings.from_env({PARTITIONS_START_ENV: "2025-06-15"}).partitions_start == dt.date(2025, 6, 15)
    for bad in ("2025/06/15", "June", "2025-6-15"):
        with pytest.raises(SettingsError) as info:
            CodexSettings.from_env({PARTITIONS_START_ENV: bad})
        assert str(info.value) == f"{PARTITIONS_START_ENV}={bad!r} is not a date (expected YYYY-MM-DD)"


def test_dagster_partitions_follow_the_settings() -> None:
    from codex_pipeline.defs.partitions import daily_partitions

    start = CodexSettings.from_env({PARTITIONS_START_ENV: "2026-10-15"})
    assert daily_partitions(start).get_first_partition_key() == "2026-10-15"
    assert daily_partitions(CodexSettings()).get_first_partition_key() == "2026-11-01"
