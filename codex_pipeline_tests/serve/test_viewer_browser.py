"""The evidence viewer in real Chromium: type a query, open a hit, the highlighted text is the cited span.

Screenshots of the search page and the document view go to /tmp/serve_search.png and
/tmp/serve_document.png (for the record; nothing asserts on pixels).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from codex_pipeline_tests.serve.conftest import OLD_BETA, Server

SHOTS = Path(os.environ.get("CODEX_SERVE_SHOTS", "/tmp"))

pytestmark = pytest.mark.slow


def test_a_hit_opens_its_document_with_the_cited_span_highlighted(server: Server, page) -> None:  # type: ignore[no-untyped-def]
    console: list[str] = []
    page.on("console", lambda msg: console.append(msg.text))
    page.goto(f"{server.url}/view")
    page.fill("#q", "corrosion girders east abutment")
    page.click("#search button[type=submit]")
    page.wait_for_selector(".hit a.open")
    page.screenshot(path=str(SHOTS / "serve_search.png"), full_page=True)
    page.click(".hit a.open >> nth=0")
    page.wait_for_selector("mark.cite")
    page.screenshot(path=str(SHOTS / "serve_document.png"))

    query = parse_qs(urlparse(page.url).query)
    spans = [tuple(int(x) for x in m.split("-")) for m in query["mark"][0].split(",")]
    with server.client() as c:
        doc = c.get(f"/documents/{query['doc_id'][0]}", params={"dataset": query["dataset"][0]}).json()
    text = doc["canonical_text"]
    for i, (start, end) in enumerate(spans):
        shown = page.eval_on_selector_all(f'mark.cite[data-span="{i}"]', "els => els.map(e => e.textContent).join('')")
        assert shown == text[start:end] and shown.strip()
    # the whole text is there, untouched by the markup (boundary labels are CSS, not text)
    assert page.inner_text("#text").replace("\n", "").replace(" ", "") == text.replace("\n", "").replace(" ", "")
    assert page.eval_on_selector("#text", "e => e.textContent") == text
    assert page.locator("a.b").count() >= 3  # chunk boundaries visible
    assert "corrosion" in page.input_value("#citation") and query["chunk"][0] in page.input_value("#citation")
    assert page.inner_text("#locator").strip()
    # the highlighted span was scrolled into view
    assert page.eval_on_selector("mark.cite", "e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    page.click("#copy")
    page.locator("#copy", has_text="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == page.input_value("#citation")
    assert not [m for m in console if "Content Security Policy" in m], console
    # an old id shows where it redirects
    page.goto(f"{server.url}/view/chunk/{OLD_BETA}")
    assert OLD_BETA in page.inner_text("#redirected") and "content_hash" in page.inner_text("#redirected")
    assert "log-book" in page.inner_text("#chunk")


def test_document_text_is_escaped(server: Server, page) -> None:  # type: ignore[no-untyped-def]
    """A query or an id with markup is shown as text, never run (the page's script is the only one)."""
    page.goto(f"{server.url}/view?q=%3Cscript%3Ewindow.pwned%3D1%3C%2Fscript%3E%3Cimg+src%3Dx+onerror%3Dwindow.pwned%3D1%3E")
    assert page.evaluate("window.pwned") is None
    assert page.input_value("#q").startswith("<script>")
