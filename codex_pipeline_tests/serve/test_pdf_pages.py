"""A PDF hit in the viewer: its page as an image, the passage's boxes drawn on it; the page image API and its 4xx."""

from __future__ import annotations

import datetime as dt  # noqa: E402,I001
import io
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from PIL import Image

from codex_pipeline.serve.settings import ServeSettings
from codex_pipeline.serve.state import ServeState
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.fakes import FakeEmbedder
from codex_pipeline_tests.serve.conftest import SAMPLE, Server, materialize_with_index, start

DAY = dt.date(2026, 11, 24)
PDF_DOC = "urn:aprs:documents:det_employment_solutions_corp.pdf"
TEXT_DOC = "urn:aprs:documents:snow-removal-notice.txt"


@pytest.fixture(scope="module")
def pdf_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    wh = Warehouse(tmp_path_factory.mktemp("serve-pdf") / "data")
    shutil.copytree(SAMPLE / "documents" / DAY.isoformat(), wh.landing_dir("documents", DAY))
    materialize_with_index(wh, "documents", DAY)
    state = ServeState.open(ServeSettings(data_dir=wh.root, embedder=FakeEmbedder(), refresh_interval_s=0))
    yield from start(state.config, state)


def test_pdf_pages_and_boxes(pdf_server: Server) -> None:
    with pdf_server.client() as c:
        doc = c.get(f"/documents/{quote(PDF_DOC)}").json()
        assert [p["number"] for p in doc["pages"]] == [1, 2, 3], doc["pages"]
        boxed = next(ch for ch in doc["chunks"] if ch["page"] == 2)
        png = c.get(doc["pages"][1]["image_url"])
        assert png.status_code == 200 and png.headers["content-type"] == "image/png"
        img = Image.open(io.BytesIO(png.content))
        w, h = doc["pages"][1]["width"], doc["pages"][1]["height"]
        assert img.size[0] > 100 and abs(img.size[0] / img.size[1] - w / h) < 0.01  # the page, not a thumbnail of it
        view = c.get(boxed["viewer_url"]).text
        assert 'data-page="2"' in view and '<rect class="box"' in view and "/page-images?" in view
        assert c.get(f"/documents/{quote(TEXT_DOC)}").json()["pages"] == []

        r = c.get("/page-images", params={"doc_id": PDF_DOC, "page": 4})
        assert r.status_code == 404 and "has 3 page(s)" in r.json()["error"]
        r = c.get("/page-images", params={"doc_id": TEXT_DOC, "page": 1})
        assert r.status_code == 404 and "not a PDF" in r.json()["error"]
        r = c.get("/page-images", params={"doc_id": PDF_DOC, "page": 0})
        assert r.status_code == 422 and r.json()["error"].startswith("query.page")
        r = c.get("/page-images", params={"doc_id": "urn:aprs:documents:../../../etc/passwd", "page": 1})
        assert r.status_code == 404


@pytest.mark.slow
def test_the_viewer_draws_the_boxes_on_the_page(pdf_server: Server, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """In Chromium: the page image loads (same origin, allowed by the CSP) and the boxes sit on it."""
    with pdf_server.client() as c:
        doc = c.get(f"/documents/{quote(PDF_DOC)}").json()
    boxed = next(ch for ch in doc["chunks"] if ch["page"] == 2)
    page.goto(pdf_server.url + boxed["viewer_url"])
    figure = page.locator('figure.pdfpage[data-page="2"]')
    figure.scroll_into_view_if_needed()
    assert figure.locator("rect.box").count() >= 1
    box = figure.locator("rect.box").first.bounding_box()
    frame = figure.locator("svg").bounding_box()
    assert box and frame and frame["x"] <= box["x"] and box["x"] + box["width"] <= frame["x"] + frame["width"] + 1
    figure.screenshot(path=str(tmp_path / "serve_pdf_page.png"))
