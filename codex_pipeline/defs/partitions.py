"""The one partitioning scheme: a landing day."""

import dagster as dg

PARTITIONS_START = "2026-11-01"
daily_partitions = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START)
