import datetime as dt

import dagster as dg

from codex_pipeline.defs import defs


def test_daily_schedule_requests_yesterday_for_every_dataset() -> None:
    schedule = defs.resolve_schedule_def("codex_daily")
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    when = dt.datetime(2026, 11, 27, 1, 30, tzinfo=dt.UTC)
    with dg.build_schedule_context(scheduled_execution_time=when) as context:
        result = schedule.evaluate_tick(context)
    (request,) = result.run_requests
    assert request.partition_key == "2026-11-26"
    assert schedule.job_name == "codex_all"
