"""The daily schedule: yesterday's landing day, every dataset."""

import dagster as dg

from codex_pipeline.defs.jobs import codex_all_job

daily_schedule = dg.build_schedule_from_partitioned_job(
    codex_all_job,
    name="codex_daily",
    hour_of_day=1,
    minute_of_hour=30,
    description="Every dataset's assets for the previous day's partition (the last complete day).",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
