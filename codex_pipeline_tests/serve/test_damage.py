"""Issue 40 item 7: a truncated Parquet partition makes its dataset a one-line 503 (JSON), and `/ready` names it.

On a copy of the served data directory, one partition of `docs` is cut short as a full disk
would leave it; the other dataset is still served, the server moves and rewrites nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import quote

from codex_pipeline.serve.settings import ServeSettings
from codex_pipeline.serve.state import ServeState
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.fakes import FakeEmbedder
from codex_pipeline_tests.serve.conftest import GUIDE, start


def test_a_truncated_partition_is_a_one_line_503_for_its_dataset(data_dir: Warehouse, tmp_path: Path) -> None:
    wh = Warehouse(tmp_path / "data")
    shutil.copytree(data_dir.root, wh.root)
    state = ServeState.open(ServeSettings(data_dir=wh.root, embedder=FakeEmbedder(), refresh_interval_s=0))
    for server in start(state.config, state):
        with server.client() as c:
            doc = c.get(f"/documents/{quote(GUIDE)}").json()
            chunk_id = doc["chunks"][0]["chunk_id"]
            broken = sorted((wh.root / "warehouse" / "docs" / "chunks").glob("*.parquet"))[0]
            data = broken.read_bytes()
            broken.write_bytes(data[: len(data) // 2])  # a partition cut short

            for path in (f"/documents/{quote(GUIDE)}", f"/chunks/{chunk_id}", f"/chunks/{chunk_id}/parent"):
                r = c.get(path)
                assert r.status_code == 503 and r.headers["content-type"] == "application/json", path
                line = r.json()["error"]
                assert "\n" not in line and "Traceback" not in line
                assert "dataset docs is unavailable" in line and broken.name in line and "codex materialize" in line

            ready = c.get("/ready").json()
            assert set(ready["damaged"]) == {"docs"} and broken.name in ready["damaged"]["docs"]
            assert ready["damaged"]["docs"] in ready["warnings"]
            others = c.get("/documents/urn:aprs:osha_safety:nothing-here", params={"dataset": "osha_safety"})
            assert others.status_code == 404  # the other dataset still answers
        assert broken.exists() and broken.stat().st_size == len(data) // 2  # the server repaired nothing behind the pipeline


def test_an_unquoted_path_in_duckdbs_message_is_found(data_dir: Warehouse, tmp_path: Path) -> None:
    """DuckDB writes "IO Error: could not read /…/x.parquet" with no quotes: the "r:" of "Error:" is no drive."""
    from codex_pipeline.serve.damage import from_error

    wh = Warehouse(tmp_path / "data")
    shutil.copytree(data_dir.root, wh.root)
    broken = sorted((wh.root / "warehouse" / "docs" / "chunks").glob("*.parquet"))[0]
    broken.write_bytes(broken.read_bytes()[:100])
    line = from_error(wh, OSError(f"IO Error: could not read {broken}: truncated"))
    assert line is not None and f"warehouse/docs/chunks/{broken.name} is damaged" in line and "\n" not in line
