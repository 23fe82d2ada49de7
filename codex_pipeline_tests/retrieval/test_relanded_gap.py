"""Issue 29, item 1: a re-landed document never vanishes from search between its day's chunks step and
its search-index step (or for ever, when the run dies in embeddings).

Day 1 is materialized in full; day 2 lands the same file with an addendum and runs only ``raw`` and
``chunks`` (the run stopped before embeddings): the document index already points at day 2, the
search index still holds day 1. Every reader (``Retriever`` as is, ``Retriever`` while another
process holds the index's build lock, ``codex search --no-refresh``) must return the day-1 version,
and the day-2 version once the day's run is complete.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json

import dagster as dg
import pytest

from codex_pipeline.cli import app as cli
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse
from codex_pipeline.defs.search_assets import build_search_index_asset
from codex_pipeline.retrieval import Retriever, index_root
from codex_pipeline.retrieval.corpus import build_lock
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.fakes import FakeEmbedder, FakeEmbedding

D1, D2 = dt.date(2026, 11, 1), dt.date(2026, 11, 2)
NARRATIVE = get_dataset("narrative")
BRIDGE = ("The wombat crossing on Elm Street bridge reopens on Monday. Crews finished the deck repairs. "
          "Residents asked about the detour signs near the school. ") * 6
LIBRARY = ("The library board approved the budget for the new reading room. Opening hours extend to nine "
           "on weekdays, and the children's section gets new shelves. ") * 8
ADDENDUM = "\n\nAddendum: the detour signs were moved to Oak Avenue on Friday.\n"
QUERY = "wombat crossing Elm Street bridge"


def land(wh: Warehouse, day: dt.date, files: dict[str, str]) -> None:
    folder = wh.landing_dir("narrative", day)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def materialize(wh: Warehouse, day: dt.date, only: list[str] | None = None) -> None:
    assets = [*build_dataset_assets(NARRATIVE), build_search_index_asset(NARRATIVE)]
    selection = [dg.AssetKey(["narrative", name]) for name in only] if only else None
    result = dg.materialize(
        assets, partition_key=day.isoformat(), selection=selection, raise_on_error=False,
        resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": FakeEmbedding()},
    )
    assert result.success


def bridge_days(wh: Warehouse, **kwargs: object) -> list[dt.date]:
    found = Retriever(wh.root, ["narrative"], embedder=FakeEmbedder(), **kwargs).search(QUERY, k=5)  # type: ignore[arg-type]
    return [h.partition_date for h in found if h.doc_id.endswith(":bridge.txt")]


def cli_bridge_days(wh: Warehouse) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["--data-dir", str(wh.root), "search", QUERY, "--dataset", "narrative", "--mode", "bm25",
                         "--no-refresh", "--json"])
    assert code == 0
    return [h["partition_date"] for h in json.loads(out.getvalue()) if h["doc_id"].endswith(":bridge.txt")]


@pytest.fixture
def gap(tmp_path) -> Warehouse:
    """Day 1 complete; day 2 (bridge re-landed with an addendum) stopped after its chunks step."""
    wh = Warehouse(tmp_path / "data")
    land(wh, D1, {"bridge.txt": BRIDGE, "library.txt": LIBRARY})
    materialize(wh, D1)
    land(wh, D2, {"bridge.txt": BRIDGE + ADDENDUM})
    materialize(wh, D2, only=["raw", "chunks"])
    return wh


def test_the_indexed_version_answers_until_the_new_one_is_indexed(gap: Warehouse) -> None:
    assert bridge_days(gap, rebuild=False) == [D1]
    assert cli_bridge_days(gap) == [D1.isoformat()]
    with build_lock(index_root(gap, "narrative")):  # a Dagster run is writing the next version right now
        retriever = Retriever(gap.root, ["narrative"], embedder=FakeEmbedder())
        found = retriever.search(QUERY, k=5)
        assert [h.partition_date for h in found if h.doc_id.endswith(":bridge.txt")] == [D1]
        assert any("being rebuilt" in w for w in found.warnings)
    materialize(gap, D2)  # the day's run completes: the new version is indexed, the old one never answers again
    assert bridge_days(gap, rebuild=False) == [D2]
    assert cli_bridge_days(gap) == [D2.isoformat()]


def test_a_retraction_still_drops_the_document_at_once(gap: Warehouse) -> None:
    land(gap, dt.date(2026, 11, 3), {"_deleted.txt": "bridge.txt\n", "other.txt": LIBRARY.replace("library", "museum")})
    materialize(gap, dt.date(2026, 11, 3), only=["raw"])
    assert bridge_days(gap, rebuild=False) == []


def test_a_reader_rebuild_in_the_gap_keeps_the_vectors_of_unchanged_chunks(tmp_path) -> None:
    """The default Retriever rebuilds the index in the gap: the re-landed document is indexed before its
    embeddings exist. Its unchanged windows keep the vectors they had (same chunk id, same text), so it
    is still found by vector search; only the changed window waits for its embeddings step."""
    wh = Warehouse(tmp_path / "data")
    long_bridge = "\n\n".join(f"Section {n}. " + BRIDGE for n in range(8))  # several 600-token windows
    land(wh, D1, {"bridge.txt": long_bridge, "library.txt": LIBRARY})
    materialize(wh, D1)
    land(wh, D2, {"bridge.txt": long_bridge + ADDENDUM})
    materialize(wh, D2, only=["raw", "chunks"])
    retriever = Retriever(wh.root, ["narrative"], embedder=FakeEmbedder())  # rebuilds: inputs changed
    found = retriever.search(QUERY, k=5, mode="vector")
    assert {h.partition_date for h in found if h.doc_id.endswith(":bridge.txt")} == {D2}
    manifest = retriever.index("narrative").manifest
    assert 0 < manifest.missing_vectors < manifest.chunks  # the changed window only
