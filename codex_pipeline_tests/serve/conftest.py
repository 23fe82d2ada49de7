"""A small data dir materialized through real Dagster (fake embedder), and `codex serve` on a loopback port.

Two datasets: ``osha_safety`` (sample cases: chunks with parents and children) and ``docs``
(one guide whose heading was renamed, so its old chunk ids redirect, and one note retracted
by a tombstone, so its ids are gone). The server runs in a thread of the test process
(uvicorn on 127.0.0.1, a free port), its query embedder the fake the index was built with.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
import pytest
import uvicorn

import codex_pipeline
from codex_pipeline.core.ids import make_chunk_id
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse
from codex_pipeline.defs.search_assets import build_search_index_asset
from codex_pipeline.serve.app import create_app
from codex_pipeline.serve.settings import ServeSettings
from codex_pipeline.serve.state import ServeState
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.fakes import FakeEmbedder, FakeEmbedding

SAMPLE = Path(codex_pipeline.__file__).parent / "sample_landing"
DAY, DAY2 = dt.date(2026, 11, 25), dt.date(2026, 11, 26)
GUIDE = "urn:aprs:docs:guide.md"
NOTE = "urn:aprs:docs:retired.md"
OLD_BETA = make_chunk_id(GUIDE, "field-notes/beta")


def _guide(title: str) -> str:
    words = ["Crews resurfaced the wombat bridge deck and repainted the rails.",
             "Inspectors logged corrosion on two girders near the east abutment.",
             "The council approved overtime so the detour ends before the school term."]
    sections = "\n".join(f"## {name}\n\n" + "".join(f"{' '.join(words[i:] + words[:i])} ({name} {n}).\n\n"
                                                      for n in range(8))
                         for i, name in enumerate(["Alpha", "Beta", "Gamma"]))
    return f"# {title}\n\nA short note before the sections.\n\n{sections}"


def materialize_with_index(wh: Warehouse, dataset: str, day: dt.date) -> None:
    spec = get_dataset(dataset)
    result = dg.materialize(
        [*build_dataset_assets(spec), build_search_index_asset(spec)], partition_key=day.isoformat(),
        resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": FakeEmbedding()},
        instance=dg.DagsterInstance.ephemeral(), raise_on_error=False,
    )
    assert result.success


def _land(wh: Warehouse, dataset: str, day: dt.date, files: dict[str, str]) -> None:
    folder = wh.landing_dir(dataset, day)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


@pytest.fixture(scope="package")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    wh = Warehouse(tmp_path_factory.mktemp("serve") / "data")
    shutil.copytree(SAMPLE / "osha_safety" / DAY.isoformat(), wh.landing_dir("osha_safety", DAY))
    materialize_with_index(wh, "osha_safety", DAY)
    _land(wh, "docs", DAY, {"guide.md": _guide("Field notes"), "retired.md": "# Retired\n\nThe old ferry timetable.\n"})
    materialize_with_index(wh, "docs", DAY)
    _land(wh, "docs", DAY, {"guide.md": _guide("Log book")})  # the heading renamed: the old ids redirect
    materialize_with_index(wh, "docs", DAY)
    _land(wh, "docs", DAY2, {"_deleted.txt": "retired.md\n"})  # retracted: its ids are gone
    materialize_with_index(wh, "docs", DAY2)
    return wh


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@pytest.fixture
def page():  # type: ignore[no-untyped-def]
    """A headless Chromium page (skipped without /usr/bin/chromium or playwright; with CI=true that fails)."""
    pw_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing (bash scripts/install_browser.sh) — CI=true, so this is a failure")
        pytest.skip(f"the viewer browser tests need {CHROMIUM} (bash scripts/install_browser.sh)")
    with pw_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            pg = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            pg.set_default_timeout(30_000)
            yield pg
        finally:
            browser.close()


@dataclass
class Server:
    url: str
    state: ServeState
    config: ServeSettings

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **kwargs)  # type: ignore[arg-type]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="package")
def state(data_dir: Warehouse) -> ServeState:
    return ServeState.open(ServeSettings(data_dir=data_dir.root, embedder=FakeEmbedder(), refresh_interval_s=0.2))


def start(config: ServeSettings, state: ServeState, **options: Any) -> Iterator[Server]:
    """A real uvicorn server on loopback for the app of ``config``; ``options``: more ``uvicorn.Config`` keywords."""
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(config, state), host="127.0.0.1", port=port, log_level="warning",
                                           **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield Server(f"http://127.0.0.1:{port}", state, config)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="package")
def server(state: ServeState) -> Iterator[Server]:
    yield from start(state.config, state)


@pytest.fixture(scope="package")
def keyed_server(state: ServeState) -> Iterator[Server]:
    """The same corpus behind an API key, with a tighter k limit and body size, and one CORS origin."""
    config = replace(state.config, api_key="s3cret key", max_k=5, max_body_bytes=2048,
                     cors_origins=("https://clerk.example",))
    yield from start(config, state)
