"""The server follows new index versions without a restart, builds in the background with ``rebuild``, and keeps
serving the last good version when a new one cannot be read."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import dagster as dg
import httpx

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse
from codex_pipeline.defs.search_assets import build_search_index_asset
from codex_pipeline.retrieval import index_root
from codex_pipeline.retrieval.index_format import CURRENT_FILE
from codex_pipeline.serve.settings import ServeSettings
from codex_pipeline.serve.state import ServeState
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.fakes import FakeEmbedder, FakeEmbedding
from codex_pipeline_tests.serve.conftest import start

D1, D2, D3 = (dt.date(2026, 11, d) for d in (1, 2, 3))
NARRATIVE = get_dataset("narrative")
WOMBAT = "The wombat crossing on Elm Street bridge reopens on Monday. Crews finished the deck repairs. " * 6
QUOKKA = "The quokka underpass stays closed until March. Inspectors found corrosion in two girders. " * 6
NUMBAT = "The numbat trail by the reservoir gets new lighting and a gravel surface this spring. " * 6


def _land_and_materialize(wh: Warehouse, day: dt.date, name: str, text: str, index: bool = True) -> None:
    folder = wh.landing_dir("narrative", day)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    assets = [*build_dataset_assets(NARRATIVE), *([build_search_index_asset(NARRATIVE)] if index else [])]
    result = dg.materialize(assets, partition_key=day.isoformat(), raise_on_error=False,
                            resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": FakeEmbedding()})
    assert result.success


def _hits(c: httpx.Client, word: str) -> list[str]:
    r = c.post("/search", json={"query": word, "mode": "bm25", "k": 5})
    assert r.status_code == 200, r.text
    return [h["doc_id"] for h in r.json()["hits"]]


def test_a_new_version_is_served_without_a_restart(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "data")
    _land_and_materialize(wh, D1, "wombat.txt", WOMBAT)
    state = ServeState.open(ServeSettings(data_dir=wh.root, embedder=FakeEmbedder(), refresh_interval_s=0))
    for server in start(state.config, state):
        with server.client() as c:
            assert _hits(c, "wombat") and not _hits(c, "quokka")
            _land_and_materialize(wh, D2, "quokka.txt", QUOKKA)  # the pipeline publishes a new version
            assert _hits(c, "quokka") == ["urn:aprs:narrative:quokka.txt"]  # the next query sees it

            # a new version that cannot be read: the one opened before it keeps answering, and says so
            (index_root(wh, "narrative") / CURRENT_FILE).write_text("v-that-is-not-there\n")
            r = c.post("/search", json={"query": "quokka", "mode": "bm25"}).json()
            assert [h["doc_id"] for h in r["hits"]] == ["urn:aprs:narrative:quokka.txt"]
            assert any("cannot be read" in w for w in r["warnings"]), r["warnings"]
            assert c.get("/ready").json()["ready"] is True


def test_rebuild_builds_in_the_background(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "data")
    _land_and_materialize(wh, D1, "wombat.txt", WOMBAT)
    state = ServeState.open(ServeSettings(data_dir=wh.root, embedder=FakeEmbedder(), refresh_interval_s=0.2,
                                        rebuild=True))
    for server in start(state.config, state):
        with server.client() as c:
            assert not _hits(c, "numbat")
            _land_and_materialize(wh, D3, "numbat.txt", NUMBAT, index=False)  # no search_index step ran
            deadline = time.monotonic() + 120
            while not _hits(c, "numbat"):  # the server's own thread builds the new version
                assert time.monotonic() < deadline, "the background rebuild never published a version"
                time.sleep(0.2)
            assert "codex_index_checks_total" in c.get("/metrics").text
