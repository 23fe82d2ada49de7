"""scripts/setup.sh's skip decision (scripts/setup_stamp.py): the demo and the tests share one venv.

The tests' setup (TORCH=auto) adds torch; the demo's (TORCH=0) must accept that venv as it is, and
either, run again with nothing changed, must install nothing. The shell test runs setup.sh itself
on a stand-in venv whose ``python -m …`` refuses to run, so a wrong decision fails instead of
installing anything.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "setup_stamp.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("setup_stamp", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["setup_stamp"] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module


stamp = _load()
DEV = frozenset({"dev"})


def installed(extras: frozenset[str] = DEV, local: bool = True, torch: str = "no", base: str = "b1") -> object:
    return stamp.Installed(base, extras, local, torch)


def test_the_demo_accepts_the_venv_the_tests_added_torch_to() -> None:
    after_tests = installed(torch="installed")
    assert stamp.covers(after_tests, "b1", DEV, True, "0")  # demo.sh: TORCH=0
    assert stamp.covers(after_tests, "b1", DEV, True, "auto")  # test.sh: TORCH=auto
    assert stamp.covers(after_tests, "b1", frozenset(), False, "0")  # a plain install, no weights: a subset


def test_the_tests_after_the_demo_install_torch_once_then_skip() -> None:
    after_demo = installed(torch="no")
    assert not stamp.covers(after_demo, "b1", DEV, True, "auto")
    after_tests = stamp.merged(after_demo, installed(torch="installed"))
    assert stamp.covers(after_tests, "b1", DEV, True, "auto") and stamp.covers(after_tests, "b1", DEV, True, "0")


def test_auto_without_torch_at_hand_is_not_retried_but_torch_1_is() -> None:
    unavailable = installed(torch="unavailable")
    assert stamp.covers(unavailable, "b1", DEV, True, "auto")
    assert not stamp.covers(unavailable, "b1", DEV, True, "1")
    # a later TORCH=0 setup on the same base keeps what the auto one found
    assert stamp.merged(unavailable, installed(torch="no")).torch == "unavailable"


def test_more_than_the_venv_holds_or_a_new_base_reruns_setup() -> None:
    have = installed(extras=frozenset({"serve"}), local=False)
    assert not stamp.covers(have, "b1", DEV, False, "0")  # extras not held
    assert not stamp.covers(have, "b1", frozenset({"serve"}), True, "0")  # weights not held
    assert not stamp.covers(installed(), "b2", DEV, True, "0")  # pyproject, constraints, scripts or Python changed
    assert not stamp.covers(None, "b1", frozenset(), False, "0")  # no stamp, or the old one-hash format


def test_merged_keeps_an_earlier_setups_extras_only_on_the_same_base() -> None:
    before = installed(extras=frozenset({"serve"}), torch="installed")
    same = stamp.merged(before, installed(extras=DEV, local=False))
    assert (same.extras, same.local, same.torch) == (frozenset({"serve", "dev"}), True, "installed")
    assert stamp.merged(before, installed(extras=DEV, base="b2")) == installed(extras=DEV, base="b2")


def test_the_base_changes_with_each_input_and_the_interpreter(tmp_path: Path) -> None:
    for name in stamp.INPUTS:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    first = stamp.base_hash(tmp_path, "3.11.7")
    assert stamp.base_hash(tmp_path, "3.11.7") == first
    assert stamp.base_hash(tmp_path, "3.12.1") != first
    for name in stamp.INPUTS:
        (tmp_path / name).write_text("y")
        assert stamp.base_hash(tmp_path, "3.11.7") != first, name
        (tmp_path / name).write_text("x")


def test_an_old_or_broken_stamp_reads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "stamp"
    path.write_text("48de1cb029fbb0f6\n")
    assert stamp.Installed.read(path) is None
    assert stamp.Installed.read(tmp_path / "absent") is None
    path.write_text(installed(torch="installed").to_json())
    assert stamp.Installed.read(path) == installed(torch="installed")


def _fake_venv(tmp_path: Path) -> Path:
    """A venv stand-in: its python runs scripts but refuses ``-m`` (pip, venv), so nothing installs."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\n[ "$1" = -m ] && {{ echo "stand-in venv: refused python $*" >&2; exit 97; }}\n'
                      f'exec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    (venv / "bin" / "activate").write_text(f'PATH="{venv}/bin:$PATH"; export PATH\n')
    return venv


def _setup(venv: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "VENV": str(venv), "PYTHON": sys.executable, "EXTRAS": "dev", "LOCAL": "1", **env}
    return subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh")], env=full, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("order", [("0", "auto", "0", "auto"), ("auto", "0", "auto", "0")])
def test_setup_sh_skips_the_demo_and_the_tests_after_the_tests_setup(tmp_path: Path, order: tuple[str, ...]) -> None:
    venv = _fake_venv(tmp_path)
    assert stamp.main(["record", str(venv / ".codex-setup-stamp"), "--extras", "dev", "--torch", "installed"]) == 0
    for torch in order:  # demo.sh (TORCH=0) and test.sh (TORCH=auto), alternating, twice
        done = _setup(venv, TORCH=torch)
        assert done.returncode == 0, done.stderr
        assert f"setup: {venv} is up to date (extras [dev], weights yes, torch installed)" in done.stdout


def test_setup_sh_does_not_skip_a_request_the_venv_does_not_cover(tmp_path: Path) -> None:
    venv = _fake_venv(tmp_path)
    assert stamp.main(["record", str(venv / ".codex-setup-stamp"), "--extras", "dev", "--torch", "no"]) == 0
    done = _setup(venv, TORCH="1")
    assert done.returncode == 97 and "stand-in venv: refused python -m pip" in done.stderr
