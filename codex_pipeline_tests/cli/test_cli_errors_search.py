"""`codex search` failures are one line on stderr naming the input and the fix, never a traceback.

Each case runs the real command line (``cli.main``) on a data directory materialized through
Dagster (fake embedder) and damaged, locked or misconfigured the way an operator would meet it
(issue 29, item 7).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codex_pipeline.cli import main
from codex_pipeline.defs.resources import EmbeddingSettings, OpenAIConnectionSettings
from codex_pipeline.warehouse import catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import SAMPLE_LANDING, land, materialize_dataset
from codex_pipeline_tests.loopback_openai import LoopbackOpenAI

DAY = "2026-11-24"
KEY = "sk-loopback-test-key-0000"


def codex(capsys: pytest.CaptureFixture[str], wh: Warehouse, *argv: str) -> tuple[int, str]:
    """``codex --data-dir … ARGV`` in this process: exit code and stderr."""
    capsys.readouterr()
    rc = main(["--data-dir", str(wh.root), *argv])
    return rc, capsys.readouterr().err


def assert_one_line(rc: int, err: str, *names: str) -> None:
    """Non-zero exit, exactly one line on stderr, no traceback, every name in it."""
    assert rc != 0, err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err, err
    for name in names:
        assert name in err, (name, err)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """One day of narrative: raw, chunks and fake embeddings, materialized through Dagster."""
    wh = Warehouse(tmp_path_factory.mktemp("search-errors") / "data")
    land(wh, "narrative", DAY, SAMPLE_LANDING / "narrative" / DAY)
    assert materialize_dataset(wh, "narrative", DAY).success
    return wh


@pytest.fixture
def wh(built: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Warehouse:
    """A copy of the built data directory, the test's to damage."""
    copy = Warehouse(tmp_path / "data")
    shutil.copytree(built.root, copy.root)
    monkeypatch.setenv("CODEX_DATA_DIR", str(copy.root))
    return copy


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_a_damaged_chunks_file_names_the_file_and_the_day_to_rerun(wh: Warehouse, capsys) -> None:
    damaged = wh.partition_path("narrative", "chunks", dt.date.fromisoformat(DAY))
    _truncate(damaged)
    rc, err = codex(capsys, wh, "search", "--mode", "bm25", "water main")
    assert_one_line(rc, err, "codex search:", str(damaged), f"codex materialize {DAY}")


def test_a_damaged_document_index_names_the_file_and_the_fix(wh: Warehouse, capsys) -> None:
    damaged = wh.root / "warehouse" / "narrative" / "index" / "documents.parquet"
    assert codex(capsys, wh, "search", "--mode", "bm25", "water")[0] == 0  # the search index exists
    _truncate(damaged)
    rc, err = codex(capsys, wh, "search", "--mode", "bm25", "--no-refresh", "water")
    assert_one_line(rc, err, "codex search:", str(damaged), "rebuilds it")


def test_a_bad_day_is_a_usage_line(wh: Warehouse, capsys) -> None:
    rc, err = codex(capsys, wh, "search", "--mode", "bm25", "--from", "notadate", "water")
    assert_one_line(rc, err, "codex search: error: argument --from", "'notadate'", "YYYY-MM-DD")
    assert rc == 2


@pytest.fixture
def openai_index(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackOpenAI]:
    """``wh`` embedded with text-embedding-3-large through a loopback server (running while the test uses it)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackOpenAI() as server:
        config = OpenAIConnectionSettings(base_url=server.base_url, timeout_s=5.0, backoff_base_s=0.01, max_backoff_s=0.05)
        assert materialize_dataset(wh, "narrative", DAY, embedding=EmbeddingSettings(kind="openai", openai=config)).success
        monkeypatch.setenv("CODEX_EMBEDDER", "openai")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


def test_an_unreachable_embedder_names_its_url(wh: Warehouse, openai_index: LoopbackOpenAI, capsys) -> None:
    assert codex(capsys, wh, "search", "water main", "-k", "1")[0] == 0  # reachable: the index answers
    url = openai_index.base_url
    openai_index.stop()  # nobody listens on that port any more
    rc, err = codex(capsys, wh, "search", "water main", "-k", "1")
    assert_one_line(rc, err, "codex search:", url, "OPENAI_BASE_URL", "--mode bm25")


def test_a_locked_catalog_names_the_holder(
    wh: Warehouse, openai_index: LoopbackOpenAI, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    connect = catalog._connect
    monkeypatch.setattr(catalog, "_connect", lambda path, read_only, wait_s: connect(path, read_only, min(wait_s, 0.5)))
    holder = subprocess.Popen(  # a DuckDB session holding the catalog read-write, as a notebook would
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('ready', flush=True); "
         "time.sleep(120)", str(wh.catalog_path)],
        stdout=subprocess.PIPE, text=True, env={**os.environ},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        rc, err = codex(capsys, wh, "search", "--history", "--dataset", "narrative", "water main")
    finally:
        holder.kill()
        holder.wait()
    assert_one_line(rc, err, "codex search:", str(wh.catalog_path), f"PID {holder.pid}", "retry")
