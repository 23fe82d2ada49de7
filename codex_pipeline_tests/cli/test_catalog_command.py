"""Issue 29, item 5 from the command line: `codex catalog rebuild`, and `codex query` / `codex inspect` on a damaged catalog."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codex_pipeline.cli.app import main
from codex_pipeline.warehouse.catalog import VIEWS_FILE
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.warehouse import catalog_data
from codex_pipeline_tests.warehouse.catalog_data import OTHER, views


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    return catalog_data.build(tmp_path_factory.mktemp("template") / "data")


@pytest.fixture
def wh(template: Warehouse, tmp_path: Path) -> Warehouse:
    return catalog_data.copy(template, tmp_path / "data")


def test_catalog_rebuild_brings_back_every_view_from_the_files(wh: Warehouse, capsys: pytest.CaptureFixture[str]) -> None:
    before = views(wh)
    wh.catalog_path.write_bytes(b"not a database")
    (wh.root / VIEWS_FILE).write_text("{")
    assert main(["--data-dir", str(wh.root), "catalog", "rebuild"]) == 0
    out = capsys.readouterr().out
    assert f"rebuilt {wh.catalog_path}: {len(before)} views over 2 dataset(s)" in out
    assert views(wh) == before


@pytest.mark.parametrize("command", [
    ["query", f"SELECT count(*) FROM codex.{OTHER}_rejects"],
    ["inspect", "summary", "--dataset", "narrative"],
])
def test_a_truncated_catalog_does_not_stop_query_or_inspect(wh: Warehouse, command: list[str]) -> None:
    """In a process of its own, as a user runs it: the warning is one line on stderr, then the answer."""
    data = wh.catalog_path.read_bytes()
    wh.catalog_path.write_bytes(data[: len(data) // 3])
    done = subprocess.run(
        [sys.executable, "-m", "codex_pipeline.cli", "--data-dir", str(wh.root), *command],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (warning,) = done.stderr.strip().splitlines()
    assert str(wh.catalog_path) in warning and "rebuilt" in warning
    assert done.stdout.strip()


def test_a_rebuild_that_cannot_write_is_one_line_naming_the_fix(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    from codex_pipeline.warehouse import catalog

    def full(*_: object) -> dict[str, str]:
        raise OSError(errno.ENOSPC, "No space left on device")

    wh.catalog_path.write_bytes(b"garbage")
    monkeypatch.setattr(catalog, "_rebuild_catalog", full)
    assert main(["--data-dir", str(wh.root), "query", "SELECT 1"]) == 2
    assert main(["--data-dir", str(wh.root), "catalog", "rebuild"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all("No space left on device (free space on the disk of" in line for line in lines)
