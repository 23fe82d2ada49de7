"""Issue 29, items 5 and 6: a damaged catalog rebuilds itself from the warehouse; a data directory can be copied or moved."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pytest

from codex_pipeline.warehouse.catalog import INFO_TABLE, VIEWS_FILE, connect_catalog, ensure_views, rebuild_catalog
from codex_pipeline.warehouse.catalog_views import check_identifier, views_for
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.warehouse import catalog_data
from codex_pipeline_tests.warehouse.catalog_data import OTHER, count, views


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    return catalog_data.build(tmp_path_factory.mktemp("template") / "data")


@pytest.fixture
def wh(template: Warehouse, tmp_path: Path) -> Warehouse:
    return catalog_data.copy(template, tmp_path / "data")


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes({"empty": b"", "half": data[: len(data) // 2], "garbage": os.urandom(len(data))}[how])


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("how", ["empty", "half", "garbage"])
def test_a_damaged_catalog_is_rebuilt_on_open_with_one_warning(
    wh: Warehouse, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    before = views(wh)
    chunks = count(wh, "narrative_chunks")
    _damage(wh.catalog_path, how)
    with caplog.at_level(logging.WARNING):
        assert count(wh, "narrative_chunks") == chunks > 0  # the old code: IOException "not a valid DuckDB database"
    assert views(wh) == before
    (warning,) = _warnings(caplog)
    assert str(wh.catalog_path) in warning and "rebuilt" in warning and "\n" not in warning


def test_with_the_registry_damaged_too_every_dataset_with_files_gets_its_views_back(
    wh: Warehouse, caplog: pytest.LogCaptureFixture
) -> None:
    before = views(wh)
    assert {"narrative_chunks", "narrative_chunks_history", "narrative_documents", f"{OTHER}_rejects"} <= before.keys()
    _damage(wh.catalog_path, "garbage")
    (wh.root / VIEWS_FILE).write_text('{"narrative/chunks": ')
    with caplog.at_level(logging.WARNING):
        assert views(wh) == before
    assert count(wh, f"{OTHER}_rejects") == 2
    assert set(json.loads((wh.root / VIEWS_FILE).read_text())) >= {"narrative/chunks", f"{OTHER}/rejects"}


def test_a_damaged_registry_is_rederived_for_every_dataset_not_only_the_one_that_runs(wh: Warehouse) -> None:
    before = views(wh)
    (wh.root / VIEWS_FILE).write_text("garbage")
    ensure_views(wh, [("narrative", "chunks")])  # what the next run of one dataset does
    assert views(wh) == before  # the old code dropped permit_signals' views until it ran again
    assert f"{OTHER}/rejects" in json.loads((wh.root / VIEWS_FILE).read_text())


def test_a_deleted_catalog_and_registry_come_back_from_the_files(wh: Warehouse) -> None:
    before = views(wh)
    wh.catalog_path.unlink()
    (wh.root / VIEWS_FILE).unlink()
    created, failed = rebuild_catalog(wh)
    assert not failed and set(created) == before.keys()
    assert views(wh) == before


def test_a_copied_data_dir_serves_its_own_files(template: Warehouse, tmp_path: Path) -> None:
    """A restored backup: its views read the copy's files, never the original's."""
    shutil.copytree(template.root, tmp_path / "restored")
    copy = Warehouse(tmp_path / "restored")
    shutil.rmtree(copy.table_dir(OTHER, "rejects"))  # the copy differs from the original from now on
    (copy.root / "warehouse" / OTHER / "rejects").mkdir()
    sql = " ".join(views(copy).values())
    assert str(template.root) not in sql and str(copy.root / "warehouse") in sql
    assert f"{OTHER}_rejects" not in views(copy)  # the old code served the original's two rows
    assert count(copy, "narrative_chunks") == count(template, "narrative_chunks")
    con = connect_catalog(copy)
    try:
        assert con.execute(f"SELECT data_dir FROM {INFO_TABLE}").fetchone() == (str(copy.root),)
    finally:
        con.close()


def test_a_moved_data_dir_works(template: Warehouse, tmp_path: Path) -> None:
    before = Warehouse(tmp_path / "before")
    shutil.copytree(template.root, before.root)
    ensure_views(before, [("narrative", "chunks")])  # a run there: its catalog reads its own files from now on
    assert str(template.root) not in " ".join(views(before).values())
    expected = count(before, "narrative_chunks")
    (tmp_path / "before").rename(tmp_path / "after")
    moved = Warehouse(tmp_path / "after")
    assert count(moved, "narrative_chunks") == expected  # the old code: "No files found that match the pattern"
    assert str(tmp_path / "before") not in " ".join(views(moved).values())


def test_a_run_in_a_copied_data_dir_rewrites_the_registry_for_the_copy(template: Warehouse, tmp_path: Path) -> None:
    shutil.copytree(template.root, tmp_path / "copy")
    copy = Warehouse(tmp_path / "copy")
    ensure_views(copy, [(OTHER, "rejects")])
    registry = (copy.root / VIEWS_FILE).read_text()
    assert str(template.root) not in registry and str(copy.root) in registry


@pytest.mark.parametrize("name", ["narrative'; DROP VIEW x; --", "../narrative", "Narrative", "a b", ""])
def test_names_that_are_not_identifiers_never_reach_view_sql(wh: Warehouse, name: str) -> None:
    with pytest.raises(ValueError, match="not a plain identifier"):
        views_for(wh, name, "chunks")
    with pytest.raises(ValueError, match="not a plain identifier"):
        views_for(wh, "narrative", name)
    assert check_identifier("narrative") == "narrative"


def test_a_registry_entry_with_a_hostile_name_is_skipped_not_executed(wh: Warehouse) -> None:
    registry = json.loads((wh.root / VIEWS_FILE).read_text())
    registry["x'; COPY (SELECT 1) TO 'pwned.csv'; --/chunks"] = {"x": "CREATE VIEW codex.x AS SELECT 1"}
    (wh.root / VIEWS_FILE).write_text(json.dumps(registry))
    wh.catalog_path.unlink()
    rebuild_catalog(wh)
    assert "x" not in views(wh) and not list(wh.root.rglob("pwned.csv"))


READER = """
import logging, sys
logging.basicConfig(level=logging.WARNING, format="%(message)s")
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
con = connect_catalog(Warehouse(sys.argv[1]))
print(con.execute("SELECT count(*) FROM codex.narrative_chunks").fetchone()[0])
"""


def test_readers_that_meet_a_damaged_catalog_at_once_rebuild_it_once(wh: Warehouse) -> None:
    import subprocess
    import sys

    chunks = count(wh, "narrative_chunks")
    _damage(wh.catalog_path, "half")
    procs = [subprocess.Popen([sys.executable, "-c", READER, str(wh.root)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [e for _, e in outs]
    assert [int(o) for o, _ in outs] == [chunks] * 4
    assert sum("rebuilt" in e for _, e in outs) == 1  # the others found it repaired under the lock
