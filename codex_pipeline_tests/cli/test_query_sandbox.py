"""Issue 29, item 3: `codex query` reads the catalog's views and nothing else unless told, and writes nothing.

Each escape the issue reproduced (and a few neighbours) fails with one line that names
``--unsafe-allow-files``, and leaves no file written, read or changed.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from codex_pipeline.cli.app import main
from codex_pipeline.cli.query_command import UNSAFE_FILES_FLAG
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.warehouse import catalog_data


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    return catalog_data.build(tmp_path_factory.mktemp("template") / "data")


@pytest.fixture
def wh(template: Warehouse, tmp_path: Path) -> Warehouse:
    return catalog_data.copy(template, tmp_path / "data")


@pytest.fixture(scope="module")
def shared(template: Warehouse, tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """One copy for the statements below that must change nothing: each test checks that its own
    statement left every file as it was, so a statement that did write still fails its test."""
    return catalog_data.copy(template, tmp_path_factory.mktemp("shared") / "data")


def _query(wh: Warehouse, sql: str, *flags: str) -> int:
    return main(["--data-dir", str(wh.root), "query", *flags, sql])


def _published(wh: Warehouse) -> Path:
    return next((wh.root / "warehouse" / "narrative" / "chunks").glob("*.parquet"))


def _digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its SHA-256: what a refused statement must leave as it was."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


ESCAPES = {
    "read_csv of /etc/passwd": "SELECT * FROM read_csv('/etc/passwd', sep = ':')",
    "read_text of a file outside the warehouse": "SELECT * FROM read_text('{root}/codex_catalog.views.json')",
    "a path that climbs out of the warehouse": "SELECT * FROM read_text('{root}/warehouse/../codex_catalog.views.json')",
    "glob of another folder": "SELECT * FROM glob('/etc/*')",
    "COPY TO a file": "COPY (SELECT 1 AS x) TO '{out}/copied.csv'",
    "COPY over a published partition": (
        "COPY (SELECT * REPLACE ('FORGED' AS chunk_text) FROM read_parquet('{published}')) TO '{published}'"
    ),
    "COPY a new file into the warehouse": "COPY (SELECT 1 AS x) TO '{root}/warehouse/narrative/chunks/2099-01-01.parquet'",
    "EXPLAIN ANALYZE of a COPY": "EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{root}/warehouse/narrative/chunks/2099-01-01.parquet'",
    "COPY of a PIVOT (several statements)": "COPY (PIVOT codex.narrative_chunks ON chunk_type USING count(*)) TO '{out}/p.csv'",
    "a COPY of a PIVOT into the warehouse": (
        "COPY (PIVOT codex.narrative_chunks ON chunk_type USING count(*)) TO '{root}/warehouse/narrative/chunks/2099-01-01.parquet'"
    ),
    "a COPY after a SELECT": "SELECT 1; COPY (SELECT 1 AS x) TO '{out}/second.csv'",
    "EXPORT DATABASE": "EXPORT DATABASE '{out}/exported'",
    "INSTALL": "INSTALL httpfs",
    "LOAD": "LOAD httpfs",
    "ATTACH another file": "ATTACH '{out}/other.duckdb' AS other",
    "SET it back": "SET enable_external_access = true",
    "RESET the lock": "RESET lock_configuration",
    "USE another database": "USE memory",
    "DETACH the catalog": "DETACH codex_catalog",
    "CREATE in the catalog": "CREATE VIEW codex.x AS SELECT 1",
    "a URL": "SELECT * FROM read_csv('https://example.com/a.csv')",
    "IMPORT DATABASE (typed PRAGMA by DuckDB)": "IMPORT DATABASE '{out}'",
    "a PRAGMA that is not on the list": "PRAGMA enable_profiling",
    "a PRAGMA that writes its profile to a file": "PRAGMA profiling_output = '{out}/profile.json'",
}


@pytest.mark.parametrize("sql", ESCAPES.values(), ids=ESCAPES.keys())
def test_an_escape_fails_in_one_line_naming_the_flag_and_touches_nothing(
    shared: Warehouse, tmp_path: Path, sql: str, capsys: pytest.CaptureFixture[str]
) -> None:
    wh = shared
    out = tmp_path / "out"
    out.mkdir()
    before = _digest(wh.root / "warehouse")
    statement = sql.format(root=wh.root, out=out, published=_published(wh))
    assert _query(wh, statement) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("codex query: ") and UNSAFE_FILES_FLAG in line and "Traceback" not in captured.err
    assert "root:" not in captured.out  # nothing of /etc/passwd
    assert not list(out.iterdir())
    assert _digest(wh.root / "warehouse") == before


READS = {
    "a view": "SELECT count(*) AS n FROM codex.narrative_chunks",
    "the history and the documents": "SELECT count(*) FROM codex.narrative_chunks_history JOIN codex.narrative_documents USING (doc_id)",
    "a published file by path": "SELECT count(*) FROM read_parquet('{published}')",
    "DESCRIBE": "DESCRIBE codex.narrative_chunks",
    "SUMMARIZE": "SUMMARIZE codex.permit_signals_rejects",
    "EXPLAIN": "EXPLAIN SELECT * FROM codex.narrative_chunks",
    "EXPLAIN ANALYZE of a SELECT": "EXPLAIN ANALYZE SELECT count(*) FROM codex.narrative_chunks",
    "PIVOT with its values": "PIVOT codex.narrative_chunks ON chunk_type IN ('narrative_window') USING count(*)",
    "EXPLAIN after a comment": "-- why\n/* plan */ EXPLAIN ANALYZE SELECT 1",
    "PRAGMA": "PRAGMA version",
    "two SELECTs": "SELECT 1; SELECT count(*) FROM codex.permit_signals_rejects",
}


@pytest.mark.parametrize("sql", READS.values(), ids=READS.keys())
def test_reading_the_catalog_still_works(shared: Warehouse, sql: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = _digest(shared.root / "warehouse")
    assert _query(shared, sql.format(published=_published(shared))) == 0, capsys.readouterr().err
    assert "(no rows)" not in capsys.readouterr().out
    assert _digest(shared.root / "warehouse") == before


def test_the_flag_gives_a_plain_session_for_the_users_own_files(
    wh: Warehouse, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine.csv"
    mine.write_text("doc\nurn:aprs:narrative:x\n")
    assert _query(wh, f"SELECT count(*) AS n FROM read_csv('{mine}')", UNSAFE_FILES_FLAG) == 0
    assert "1" in capsys.readouterr().out.splitlines()[-1]
    assert _query(wh, f"COPY (SELECT count(*) AS n FROM codex.narrative_chunks) TO '{tmp_path / 'n.csv'}'",
                  UNSAFE_FILES_FLAG) == 0
    assert (tmp_path / "n.csv").exists()


def test_the_sandbox_does_not_lock_the_callers_other_connections(
    wh: Warehouse, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """DuckDB settings belong to a database instance; the session's is private, not the one `connect_catalog` shares."""
    from codex_pipeline.warehouse.catalog import connect_catalog

    mine = tmp_path / "mine.csv"
    mine.write_text("a\n1\n")
    con = connect_catalog(wh)
    try:
        assert _query(wh, "SELECT count(*) FROM codex.narrative_chunks") == 0
        assert _query(wh, f"SELECT * FROM read_csv('{mine}')") == 2
        assert con.execute(f"SELECT count(*) FROM read_csv('{mine}')").fetchone() == (1,)
        con.execute("SET threads = 1")  # not locked either
    finally:
        con.close()


def test_a_query_run_in_another_process_reads_no_file_outside_the_data_dir(wh: Warehouse, tmp_path: Path) -> None:
    """The CLI as a user runs it: the process's own `read_csv` of a secret fails, exit 2, one line."""
    import subprocess

    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2\n")
    done = subprocess.run(
        [sys.executable, "-m", "codex_pipeline.cli", "--data-dir", str(wh.root), "query",
         f"SELECT * FROM read_csv('{secret}')"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and "hunter2" not in done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and UNSAFE_FILES_FLAG in done.stderr

