"""A full ``$DAGSTER_HOME`` disk during ``codex materialize``: one line, and no run left open.

The instance lives on a small tmpfs mounted in a private mount namespace (``unshare
--user --map-root-user --mount``: no root needed where unprivileged user namespaces are
allowed; skipped elsewhere), filled up after the instance was created. With no space at
all, opening the instance fails; with a few hundred KB, the run is created and its first
events fail, which used to leave it NOT_STARTED for ever. After the disk is freed, the
sweep every ``codex materialize`` starts with (``sweep_dead_runs``) must leave no run
NOT_STARTED or STARTED (issue 29, item 7).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from codex_pipeline.defs.run_hygiene import PID_TAG, local_run_tags, sweep_dead_runs
from codex_pipeline_tests.cli.test_cli_errors_search import assert_one_line
from codex_pipeline_tests.conftest import SAMPLE_LANDING

DAY = "2026-11-24"
SCRIPT = r"""
set -u
mount -t tmpfs -o size=16m tmpfs "$HOME_DIR" || exit 97
export DAGSTER_HOME="$HOME_DIR"
printf 'telemetry:\n  enabled: false\n' > "$HOME_DIR/dagster.yaml"
"$PY" -c "import dagster; dagster.DagsterInstance.get().get_runs_count()" || exit 98
dd if=/dev/zero of="$HOME_DIR/fill" bs=4k 2>/dev/null
"$PY" -c "import os, sys; f = sys.argv[1]; os.truncate(f, max(0, os.path.getsize(f) - int(sys.argv[2]) * 1024))" \
    "$HOME_DIR/fill" "$FREE_KB"
"$PY" -m codex_pipeline.cli --data-dir "$DATA" materialize "$DAY" > "$OUT/stdout" 2> "$OUT/stderr"
echo $? > "$OUT/rc"
rm "$HOME_DIR/fill"
"$PY" -c "
import json, dagster
from codex_pipeline.defs.run_hygiene import sweep_dead_runs
i = dagster.DagsterInstance.get()
before = [r.status.value for r in i.get_runs()]
sweep_dead_runs(i)
print(json.dumps({'before': before, 'after': [r.status.value for r in i.get_runs()]}))
" > "$OUT/runs.json"
"""


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.slow  # two CLI processes and a Dagster run in a user namespace per case: about 10 CPU-s each
@pytest.mark.skipif(not _namespaces_work(), reason="needs unshare with user and mount namespaces")
@pytest.mark.parametrize("free_kb", [0, 300])
def test_a_full_dagster_home_is_one_line_and_leaves_no_run_open(tmp_path: Path, free_kb: int) -> None:
    data, home, out = tmp_path / "data", tmp_path / "dagster_home", tmp_path / "out"
    shutil.copytree(SAMPLE_LANDING / "narrative" / DAY, data / "landing" / "narrative" / DAY)
    home.mkdir()
    out.mkdir()
    env = {"PATH": "/usr/bin:/bin", "PY": sys.executable, "HOME_DIR": str(home), "DATA": str(data), "OUT": str(out),
           "DAY": DAY, "FREE_KB": str(free_kb), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "bash", "-c", SCRIPT], env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode in (97, 98):
        pytest.skip(f"no tmpfs in a user namespace here: {proc.stderr.strip()[:200]}")
    err = (out / "stderr").read_text()
    assert int((out / "rc").read_text()) == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("codex materialize: cannot write the Dagster instance in " + str(home)), err
    assert "free space there" in err and f"codex materialize {DAY}" in err
    runs = json.loads((out / "runs.json").read_text())
    if free_kb:  # room for the run's row but not its events: the run was created and could not start
        assert runs["before"] == ["NOT_STARTED"], runs
    assert "NOT_STARTED" not in runs["after"] and "STARTED" not in runs["after"], runs


@pytest.mark.parametrize(("home", "fix"), [("relative/home", "not an absolute path"), ("/nonexistent/home", "mkdir -p")])
def test_a_dagster_home_dagster_would_refuse_is_one_line(
    home: str, fix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from codex_pipeline.cli import main

    monkeypatch.setenv("DAGSTER_HOME", home)
    monkeypatch.setenv("CODEX_DATA_DIR", str(tmp_path / "data"))  # run_days sets it: restored after the test
    rc = main(["--data-dir", str(tmp_path / "data"), "materialize", DAY])
    assert_one_line(rc, capsys.readouterr().err, "codex materialize:", f"$DAGSTER_HOME={home!r}", fix)


def test_the_sweep_closes_a_not_started_run_of_a_dead_cli_process() -> None:
    """A NOT_STARTED run tagged by a CLI process that is gone is failed; one without the tag (queued) is not."""
    with dg.instance_for_test() as instance:
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        tags = {**local_run_tags(), PID_TAG: dead.stdout.strip()}
        orphan = instance.create_run_for_job(dg.GraphDefinition("g").to_job(), tags=tags)
        queued = instance.create_run_for_job(dg.GraphDefinition("h").to_job(), tags={})
        mine = instance.create_run_for_job(dg.GraphDefinition("i").to_job(), tags=local_run_tags())  # alive: this process
        report = sweep_dead_runs(instance)
        assert report.failed == [orphan.run_id]
        status = {r.run_id: r.status for r in instance.get_runs()}
        assert status[orphan.run_id] == dg.DagsterRunStatus.FAILURE
        assert status[queued.run_id] == status[mine.run_id] == dg.DagsterRunStatus.NOT_STARTED
