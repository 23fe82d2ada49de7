"""CI's tool check (scripts/ci_tools.sh) and interpreter finder (scripts/find_python.sh), on a PATH
that hides a tool: what a machine without it would show, without uninstalling anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(script: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "scripts" / script), *args], env=env, capture_output=True,
                          text=True, timeout=120)


def _path_without(tmp_path: Path, hidden: str) -> str:
    """A PATH holding every command of the current one except ``hidden``."""
    shadow = tmp_path / "bin"
    shadow.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            if entry.name != hidden and not (shadow / entry.name).exists():
                (shadow / entry.name).symlink_to(entry.path)
    return str(shadow)


def test_a_tool_missing_from_path_is_listed_absent_with_what_installs_it(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": _path_without(tmp_path, "valgrind")}
    done = _run("ci_tools.sh", env=env)
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ")}
    assert set(lines) >= {"valgrind", "chromium", "postgresql", "redis-server", "tesseract", "apt-get",
                          "python3.11", "python3.12", "python3.13"}
    assert lines["valgrind"].split()[1] == "absent"
    assert "scripts/install_valgrind.sh installs it" in lines["valgrind"]
    assert _run("install_valgrind.sh", "--check", env=env).returncode == 1  # absent: --check installs nothing


def test_find_python_takes_path_first_then_pyenv_and_fails_quietly(tmp_path: Path) -> None:
    fake = tmp_path / "pyenv" / "versions" / "3.99.1" / "bin" / "python3.99"
    fake.parent.mkdir(parents=True)
    fake.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    fake.chmod(0o755)
    env = {**os.environ, "PYENV_ROOT": str(tmp_path / "pyenv")}
    found = _run("find_python.sh", "3.99", env=env)
    assert (found.returncode, found.stdout.strip()) == (0, str(fake))
    missing = _run("find_python.sh", "3.98", env=env)
    assert (missing.returncode, missing.stdout) == (1, "")
