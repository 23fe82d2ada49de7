"""The documents dataset through Dagster: raw, chunks (contract), rejects, then `codex validate`,
`codex search` and `codex inspect chunk` showing the page."""

from __future__ import annotations

import json

import pytest

from codex_pipeline.cli.app import main
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import land, materialize_dataset
from codex_pipeline_tests.sources.pdf_maker import make_pdf, text_page

DAY = "2026-11-24"
PAGE_TWO = ["The riverside trail will be resurfaced in the spring.", "Crews will close one lane at a time."]


def codex(capsys: pytest.CaptureFixture[str], wh: Warehouse, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["--data-dir", str(wh.root), *argv])
    return rc, capsys.readouterr().out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    src = tmp_path_factory.mktemp("landing")
    pages = [text_page(["The parks board met on Monday to plan the year."] * 30, header="Parks Board", footer="Page 1 of 2"),
             text_page(PAGE_TWO, header="Parks Board", footer="Page 2 of 2")]
    (src / "board.pdf").write_bytes(make_pdf(pages))
    (src / "scan.pdf").write_bytes(make_pdf(["image"]))
    (src / "notes.txt").write_text("A plain note about the library hours.\n")
    wh = Warehouse(tmp_path_factory.mktemp("documents") / "data")
    land(wh, "documents", DAY, src)
    result = materialize_dataset(wh, "documents", DAY)
    assert result.success
    assert all(c.passed for c in result.get_asset_check_evaluations())
    return wh


def test_rejects_and_page_locators_in_the_catalog(built: Warehouse) -> None:
    con = connect_catalog(built)
    try:
        rejects = con.execute("SELECT source_file, reason FROM codex.documents_rejects").fetchall()
        rows = con.execute("SELECT locator, evidence_anchor, chunk_text FROM codex.documents_chunks ORDER BY locator").fetchall()
    finally:
        con.close()
    assert rejects and {f for f, _ in rejects} == {"scan.pdf"}  # a grey square: no text layer, and OCR reads nothing
    assert any("no text layer" in reason for _, reason in rejects)
    trail = [(loc, json.loads(a)) for loc, a, text in rows if "riverside trail" in text]
    assert trail and all("Parks Board" not in text and "Page 1 of 2" not in text for _, _, text in rows)
    loc, anchor = trail[0]
    assert anchor["page"] in (1, 2) and f"|p={anchor['page']:03d}|" in loc


def test_validate_search_and_inspect_show_the_page(built: Warehouse, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = codex(capsys, built, "validate", "--dataset", "documents")
    assert rc == 0 and "documents: PASS (" in out, out
    rc, out = codex(capsys, built, "search", "--mode", "bm25", "--dataset", "documents", "--json", "riverside trail")
    assert rc == 0, out
    hit = json.loads(out)[0]
    assert "|p=00" in hit["locator"] and hit["doc_id"] == "urn:aprs:documents:board.pdf"
    rc, out = codex(capsys, built, "inspect", "chunk", hit["chunk_id"], "--dataset", "documents")
    assert rc == 0 and '"page":' in out.replace(" ", "") and hit["locator"] in out, out
