"""A dataset name from the command line is checked against the registry before any use.

``--dataset ../../other/warehouse/narrative`` (another data directory's dataset) and a name
holding SQL are refused with one line listing the valid names, and nothing is created
inside or outside the data directory (issue 29, item 8; the SQL case of item 7). Every
command that takes ``--dataset`` is run: search, eval, validate, inspect.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codex_pipeline.cli import main
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.cli.test_cli_errors_search import DAY, assert_one_line
from codex_pipeline_tests.conftest import SAMPLE_LANDING, land, materialize_dataset

TRAVERSAL = "../../other/warehouse/narrative"
SQL = "narrative_chunks WHERE 1=1; DROP VIEW codex.narrative_chunks; --"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    wh = Warehouse(tmp_path_factory.mktemp("dataset-errors") / "data")
    land(wh, "narrative", DAY, SAMPLE_LANDING / "narrative" / DAY)
    assert materialize_dataset(wh, "narrative", DAY).success
    return wh


@pytest.fixture
def two(built: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Warehouse, Path]:
    """This data directory and, beside it, another one (``../../other`` seen from ``data/warehouse``)."""
    wh = Warehouse(tmp_path / "data")
    shutil.copytree(built.root, wh.root)
    shutil.copytree(built.root, tmp_path / "other")
    monkeypatch.setenv("CODEX_DATA_DIR", str(wh.root))
    return wh, tmp_path


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def _argv(command: str, name: str, tmp: Path) -> list[str]:
    gold = tmp / "gold.jsonl"
    gold.write_text('{"question": "q", "references": [{"source": "a.txt", "start": 0, "end": 1}]}\n')
    return {
        "search": ["search", "--mode", "bm25", "--dataset", name, "water main"],
        "search --history": ["search", "--history", "--dataset", name, "water main"],
        "eval": ["eval", str(gold), "--corpus", str(tmp), "--dataset", name],
        "validate": ["validate", "--dataset", name],
        "inspect": ["inspect", "summary", "--dataset", name],
    }[command]


@pytest.mark.parametrize("name", [TRAVERSAL, SQL], ids=["traversal", "sql"])
@pytest.mark.parametrize("command", ["search", "search --history", "eval", "validate", "inspect"])
def test_an_unregistered_dataset_is_one_line_and_touches_nothing(
    two: tuple[Warehouse, Path], command: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    wh, tmp = two
    argv = _argv(command, name, tmp)
    before = _files(tmp)
    capsys.readouterr()
    rc = main(["--data-dir", str(wh.root), *argv])
    err = capsys.readouterr().err
    assert_one_line(rc, err, f"codex {argv[0]}", repr(name), "narrative", "civic_intelligence")
    assert _files(tmp) == before  # no lock file, index folder or catalog anywhere


def test_a_registered_dataset_still_searches(two: tuple[Warehouse, Path], capsys: pytest.CaptureFixture[str]) -> None:
    wh, _ = two
    assert main(["--data-dir", str(wh.root), "search", "--mode", "bm25", "--dataset", "narrative", "water main"]) == 0
    assert "hit(s)" in capsys.readouterr().err
