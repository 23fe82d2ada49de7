"""A snapshot of the code location's shape: a change to it is made on purpose, and reviewed.

What is recorded is what a deployment depends on: asset keys and their dependencies,
partitions, code versions (a change re-runs partitions), pools and backfill policies,
checks and whether they block, sensors, schedules and jobs. Settings that come from the
environment (the partitions' start day, the executor, resources) are left out.

To accept a change on purpose, regenerate the file and commit it with the change::

    CODEX_UPDATE_SNAPSHOT=1 pytest codex_pipeline_tests/defs/test_definitions_snapshot.py
"""

import json
import os
from pathlib import Path
from typing import Any

import dagster as dg

from codex_pipeline.defs import defs

SNAPSHOT = Path(__file__).with_name("definitions_snapshot.json")
UPDATE_ENV = "CODEX_UPDATE_SNAPSHOT"


def _partitions(p: dg.PartitionsDefinition | None) -> dict[str, Any] | None:
    if p is None:
        return None
    out: dict[str, Any] = {"type": type(p).__name__}
    if isinstance(p, dg.TimeWindowPartitionsDefinition):
        out |= {"cron_schedule": p.cron_schedule, "timezone": p.timezone, "fmt": p.fmt}
    return out


def _assets(graph: Any) -> dict[str, Any]:
    out = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        policy = node.backfill_policy
        out[key.to_user_string()] = {
            "group": node.group_name,
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "partitions": _partitions(node.partitions_def),
            "code_version": node.code_version,
            "pools": sorted(node.pools),
            "backfill_max_partitions_per_run": None if policy is None else policy.max_partitions_per_run,
            "kinds": sorted(node.kinds),
        }
    return out


def _checks(graph: Any) -> dict[str, Any]:
    return {
        k.to_user_string(): {"blocking": graph.get_check_spec(k).blocking}
        for k in sorted(graph.asset_check_keys, key=lambda k: k.to_user_string())
    }


def _selected(job: dg.JobDefinition) -> dict[str, list[str]]:
    """The assets a job runs and the checks that run with them."""
    graph = job.asset_layer.asset_graph
    return {"assets": sorted(k.to_user_string() for k in graph.executable_asset_keys),
            "checks": sorted(k.to_user_string() for k in graph.asset_check_keys)}


def _sensors() -> dict[str, Any]:
    out = {}
    for name in sorted(s.name for s in defs.sensors or []):
        s = defs.resolve_sensor_def(name)
        out[name] = {
            "minimum_interval_seconds": s.minimum_interval_seconds,
            "default_status": s.default_status.value,
            "target": _selected(defs.get_repository_def().get_job(s.job_name)) if s.has_jobs else None,
        }
    return out


def _schedules() -> dict[str, Any]:
    out = {}
    for name in sorted(s.name for s in defs.schedules or []):
        s = defs.resolve_schedule_def(name)
        out[name] = {"cron_schedule": s.cron_schedule, "job": s.job_name, "default_status": s.default_status.value,
                     "timezone": s.execution_timezone}
    return out


def _jobs() -> dict[str, Any]:
    return {name: _selected(defs.resolve_job_def(name)) for name in sorted(j.name for j in defs.jobs or [])}


def snapshot() -> dict[str, Any]:
    graph = defs.resolve_asset_graph()
    return {"assets": _assets(graph), "checks": _checks(graph), "sensors": _sensors(),
            "schedules": _schedules(), "jobs": _jobs()}


def _changes(old: dict[str, Any], new: dict[str, Any], path: str = "") -> list[str]:
    """Where two snapshots differ, as ``section/key: old -> new`` lines."""
    lines = []
    for key in sorted(set(old) | set(new)):
        a, b, where = old.get(key), new.get(key), f"{path}/{key}" if path else key
        if isinstance(a, dict) and isinstance(b, dict):
            lines += _changes(a, b, where)
        elif a != b:
            lines.append(f"{where}: {json.dumps(a)} -> {json.dumps(b)}")
    return lines


def test_definitions_match_the_committed_snapshot() -> None:
    current = snapshot()
    if os.environ.get(UPDATE_ENV) == "1":
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    committed = json.loads(SNAPSHOT.read_text())
    changes = _changes(committed, current)
    assert not changes, (
        f"the code location's shape changed ({len(changes)} difference(s), first 30 below). If you meant it, "
        f"regenerate {SNAPSHOT.name} with `{UPDATE_ENV}=1 pytest {Path(__file__).name}` and commit it with "
        "the change:\n" + "\n".join(changes[:30])
    )


def test_the_comparison_names_what_changed() -> None:
    """The check can fail: a changed code version and a lost check are both reported."""
    old = {"assets": {"a/chunks": {"code_version": "1"}}, "checks": {"a/chunks:x": {"blocking": True}}}
    new = {"assets": {"a/chunks": {"code_version": "2"}}, "checks": {}}
    assert _changes(old, new) == ['assets/a/chunks/code_version: "1" -> "2"', 'checks/a/chunks:x: {"blocking": true} -> null']
