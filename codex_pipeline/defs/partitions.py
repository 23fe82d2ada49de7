"""The one partitioning scheme: a landing day, from ``$CODEX_PARTITIONS_START`` (default 2026-11-01)."""

import dagster as dg

from codex_pipeline.defs.environment import first_partition

PARTITIONS_START = first_partition().isoformat()
daily_partitions = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START)
