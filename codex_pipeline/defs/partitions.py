"""The one partitioning scheme: a landing day, from the settings' ``partitions_start`` (default 2026-11-01)."""

import dagster as dg

from codex_pipeline.settings import CodexSettings


def daily_partitions(settings: CodexSettings) -> dg.DailyPartitionsDefinition:
    """A partition per UTC day from ``settings.partitions_start``: every asset of a code location shares it."""
    return dg.DailyPartitionsDefinition(start_date=settings.partitions_start.isoformat())


# the partitions of the default settings: what an asset factory uses when none is given (tests, scripts)
DEFAULT_PARTITIONS = daily_partitions(CodexSettings())
