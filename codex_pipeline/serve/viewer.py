"""The evidence viewer's routes (``/view``): a search page, a document page with the cited spans, a chunk's redirect.

Server-rendered HTML (:mod:`codex_pipeline.serve.page`) with a few lines of JavaScript
(scroll to the first cited span, copy the citation); no build step, nothing fetched from
another origin.
"""

from __future__ import annotations

import datetime as dt
import hmac
import re
from typing import Any
from urllib.parse import parse_qs
from urllib.parse import quote as url_quote

try:
    from fastapi import FastAPI, Query, Request
    from fastapi.responses import HTMLResponse, RedirectResponse
except ImportError as exc:  # the [serve] extra is optional
    raise ImportError("codex serve needs FastAPI and uvicorn: pip install 'codex-pipeline[serve]'",
                      name=exc.name) from exc
from pydantic import ValidationError

from codex_pipeline.explore.navigation import Chunk
from codex_pipeline.retrieval.context import anchor_spans
from codex_pipeline.serve.convert import document_url, page_url
from codex_pipeline.serve.lookup import Catalog, Document, LookupFailed, anchor_page
from codex_pipeline.serve.models import ChunkHitOut, PropositionHitOut, SearchRequest
from codex_pipeline.serve.page import DOCUMENT_SCRIPT, annotated_text, e, page
from codex_pipeline.serve.search import search
from codex_pipeline.serve.settings import API_KEY_COOKIE, ServeSettings
from codex_pipeline.serve.state import ServeState

_MARKS = re.compile(r"^\d{1,9}-\d{1,9}(,\d{1,9}-\d{1,9}){0,63}$")


def _html(title: str, body: str, script: str = "", status: int = 200) -> HTMLResponse:
    doc, csp = page(title, body, script)
    return HTMLResponse(doc, status_code=status, headers={"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff",
                                                          "Referrer-Policy": "no-referrer"})


def _error_page(exc: LookupFailed) -> HTMLResponse:
    return _html("Not available", f'<main><div class="err">{e(exc)}</div></main>', status=exc.status)


def register(app: FastAPI, state: ServeState, catalog: Catalog, config: ServeSettings) -> None:
    """Add the viewer's HTML routes (``/view``, ``/view/document``, ``/view/chunk/{id}``, ``/view/login``) to ``app``;
    they stay out of the OpenAPI description."""
    @app.get("/view", response_class=HTMLResponse, include_in_schema=False)
    def view_search(q: str = Query("", max_length=1000), k: int = Query(10, ge=1, le=100),
                    mode: str = Query("hybrid", pattern="^(hybrid|vector|bm25)$"),
                    dataset: str = Query("", max_length=63)) -> HTMLResponse:
        body = _search_form(q, k, mode, dataset, state.datasets())
        if q.strip():
            try:
                req = SearchRequest.model_validate({"query": q, "k": k, "mode": mode, "datasets": [dataset] if dataset else []})
                result = search(state, req, config)
            except (LookupFailed, ValidationError, LookupError) as exc:
                return _html("Search", body + f'<main><div class="err">{e(exc)}</div></main>', status=400)
            body += _results(result.hits, result.warnings)
        return _html("Search", body)

    @app.get("/view/document", response_class=HTMLResponse, include_in_schema=False)
    def view_document(doc_id: str = Query(..., max_length=1024), dataset: str | None = Query(None, max_length=63),
                      chunk: str | None = Query(None, max_length=40), mark: str = Query("", max_length=1200),
                      from_: str | None = Query(None, alias="from", max_length=40)) -> HTMLResponse:
        if mark and not _MARKS.match(mark):
            return _error_page(LookupFailed(400, f"mark={mark[:40]!r}: write spans as START-END[,START-END…]"))
        marks = [(int(a), int(b)) for a, b in (m.split("-") for m in mark.split(","))] if mark else []
        try:
            doc = catalog.document(doc_id, dataset)
            moved = catalog.chunk(from_, dataset).redirects if from_ else ()
        except LookupFailed as exc:
            return _error_page(exc)
        return _html(doc.title or doc.doc_id, _document(doc, chunk, marks, moved), DOCUMENT_SCRIPT)

    @app.get("/view/chunk/{chunk_id}", include_in_schema=False, response_model=None)
    def view_chunk(chunk_id: str, dataset: str | None = Query(None, max_length=63)) -> Any:
        try:
            found = catalog.chunk(chunk_id, dataset)
        except LookupFailed as exc:
            return _error_page(exc)
        c = found.chunk
        return RedirectResponse(document_url(c.doc_id, found.dataset, c.chunk_id, list(anchor_spans(c.evidence_anchor or "")),
                                             chunk_id if found.redirects else None), status_code=303)

    @app.get("/view/login", response_class=HTMLResponse, include_in_schema=False)
    def view_login() -> HTMLResponse:
        return _login_page()

    @app.post("/view/login", include_in_schema=False, response_model=None)
    async def view_login_post(request: Request) -> Any:
        # the key travels in the form body and comes back as an HttpOnly cookie: page scripts never see it
        form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=4)
        given = (form.get("key") or [""])[0]
        if not config.api_key or not hmac.compare_digest(given.encode(), config.api_key.encode()):
            return _login_page("That is not this server's API key." if given else "Give the API key.", 401)
        done = RedirectResponse("/view", status_code=303)
        done.set_cookie(API_KEY_COOKIE, url_quote(given, safe=""), path="/", httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
        return done


def _login_page(error: str = "", status: int = 200) -> HTMLResponse:
    err = f'<div class="err">{e(error)}</div>' if error else ""
    body = (f'<main><form id="login" method="post" action="/view/login">{err}<p>This server wants an API key.</p>'
            '<input type="password" id="key" name="key" autocomplete="off"> <button type="submit">Open the viewer</button>'
            "</form></main>")
    return _html("API key", body, status=status)


def _search_form(q: str, k: int, mode: str, dataset: str, datasets: list[str]) -> str:
    opts = "".join(f'<option value="{e(d)}"{" selected" if d == dataset else ""}>{e(d)}</option>' for d in datasets)
    modes = "".join(f'<option{" selected" if m == mode else ""}>{m}</option>' for m in ("hybrid", "bm25", "vector"))
    return (f'<main><form method="get" action="/view" id="search"><input type="text" name="q" id="q" value="{e(q)}" '
            f'placeholder="search the current corpus" autofocus> <select name="mode">{modes}</select> '
            f'<select name="dataset"><option value="">all datasets</option>{opts}</select> '
            f'<input type="number" name="k" value="{k}" min="1" max="100"> '
            '<button type="submit">Search</button></form></main>')


def _results(hits: list[ChunkHitOut] | list[PropositionHitOut], warnings: list[str]) -> str:
    out = ['<main><div id="results">']
    out += [f'<p class="warn">{e(w)}</p>' for w in warnings]
    if not hits:
        out.append("<p>No hits.</p>")
    for i, h in enumerate(hits, 1):
        assert isinstance(h, ChunkHitOut)
        ev = " … ".join(h.evidence_text) or h.text[:300]
        page_no = f" · page {h.page}" if h.page is not None else ""
        out.append(f'<div class="hit"><a class="open" href="{e(h.viewer_url)}">{i}. {e(h.doc_id)}</a> '
                   f'<span class="meta">{e(h.dataset)} · {e(h.chunk_type)} · score {h.score:.4f}{page_no}</span>'
                   f'<div class="meta">{e(h.locator)}</div><blockquote>{e(ev)}</blockquote></div>')
    return "".join(out) + "</div></main>"


def _document(doc: Document, chunk_id: str | None, marks: list[tuple[int, int]], moved: tuple[Any, ...]) -> str:
    by_id = {c.chunk_id: c for c in doc.chunks}
    sel = by_id.get(chunk_id) if chunk_id else None
    children = {c.parent_chunk_id for c in doc.chunks if c.parent_chunk_id}
    starts = []
    for c in doc.chunks:  # leaves mark the reading boundaries; the selected chunk always shows
        spans = anchor_spans(c.evidence_anchor or "")
        if spans and (c.chunk_id not in children or c is sel):
            starts.append((spans[0][0], document_url(doc.doc_id, doc.dataset, c.chunk_id, list(spans)),
                           f"§{c.seq_index}", c is sel))
    selected = list(anchor_spans(sel.evidence_anchor or "")) if sel else []
    text = annotated_text(doc.canonical_text, marks, selected, starts)
    banner = "".join(f'<p class="warn" id="redirected">{e(m.old)} now redirects here (match={e(m.match)}, '
                     f"chunking_version {e(m.chunking_version)}, {m.partition_date.isoformat()})</p>" for m in moved)
    if doc.deleted_on:
        banner += (f'<p class="warn">This document was retracted on {doc.deleted_on.isoformat()} '
                   f"(by {e(doc.deleted_by)}); shown as last landed.</p>")
    side = _sidebar(doc, sel, by_id, marks)
    return (f'<main><div id="doc">{banner}<h2>{e(doc.title or doc.doc_id)}</h2>'
            f'<div class="text" id="text">{text}</div></div><aside>{side}</aside></main>')


def _sidebar(doc: Document, sel: Chunk | None, by_id: dict[str, Chunk], marks: list[tuple[int, int]]) -> str:
    days = ", ".join(d.isoformat() for d in doc.landed_on)
    out = [f"<dl><dt>document</dt><dd>{e(doc.doc_id)}</dd><dt>dataset</dt><dd>{e(doc.dataset)}</dd>"
           f"<dt>version shown</dt><dd>{doc.partition_date.isoformat()}</dd><dt>landed on</dt><dd>{e(days)}</dd></dl>"]
    if sel is None:
        return "".join(out)
    spans = list(anchor_spans(sel.evidence_anchor or ""))
    page_no = anchor_page(sel)
    link = lambda c: f'<a href="{e(document_url(doc.doc_id, doc.dataset, c.chunk_id, list(anchor_spans(c.evidence_anchor or ""))))}">§{c.seq_index} {e(c.section_id or c.chunk_id)}</a>'  # noqa: E731
    parent = by_id.get(sel.parent_chunk_id) if sel.parent_chunk_id else None
    kids = [c for c in doc.chunks if c.parent_chunk_id == sel.chunk_id]
    pos = doc.chunks.index(sel)
    out.append(f'<h3>chunk §{sel.seq_index}</h3><dl id="chunk"><dt>chunk id</dt><dd>{e(sel.chunk_id)}</dd>'
               f"<dt>section</dt><dd>{e(sel.section_id)}</dd><dt>type</dt><dd>{e(sel.chunk_type)}</dd>"
               f'<dt>locator</dt><dd id="locator">{e(sel.locator)}</dd>'
               f'<dt>page</dt><dd id="page">{page_no if page_no is not None else "—"}</dd>'
               f'<dt>spans</dt><dd>{e(spans)}</dd>'
               f'<dt>parent</dt><dd id="parent">{link(parent) if parent else "— (top level)"}</dd>'
               f'<dt>children</dt><dd id="children">{"<br>".join(link(c) for c in kids) or "—"}</dd>'
               f"<dt>previous / next</dt><dd>{link(doc.chunks[pos - 1]) if pos > 0 else '—'} · "
               f"{link(doc.chunks[pos + 1]) if pos + 1 < len(doc.chunks) else '—'}</dd></dl>")
    out.append(_page_figures(doc, sel))
    cite = _citation(doc, sel, marks or spans)
    out.append(f'<h3>citation</h3><textarea id="citation" rows="6" readonly>{e(cite)}</textarea>'
               '<button id="copy" type="button">Copy citation</button>')
    return "".join(out)


def _page_figures(doc: Document, chunk: Chunk, most: int = 3) -> str:
    """The PDF page(s) the chunk is on, its boxes drawn over them (SVG over the page PNG; PDF points, origin bottom left)."""
    if not doc.pages:
        return ""
    anchor = chunk.anchor
    by_page: dict[int, list[tuple[float, float, float, float]]] = {}
    for box in anchor.get("boxes") or []:
        if isinstance(box, list) and len(box) == 5:
            page_no, x0, y0, x1, y1 = (float(v) for v in box)
            by_page.setdefault(int(page_no), []).append((x0, y0, x1, y1))
    if not by_page and isinstance(anchor.get("page"), int):
        by_page[anchor["page"]] = []
    figures = []
    for number, boxes in sorted(by_page.items())[:most]:
        if number not in doc.pages:
            continue
        w, h = doc.pages[number]
        rects = "".join(f'<rect class="box" x="{x0:.1f}" y="{h - y1:.1f}" width="{x1 - x0:.1f}" height="{y1 - y0:.1f}"/>'
                        for x0, y0, x1, y1 in boxes)
        figures.append(f'<figure class="pdfpage" data-page="{number}"><svg viewBox="0 0 {w:.1f} {h:.1f}" role="img" '
                       f'aria-label="page {number}"><image href="{e(page_url(doc, number))}" x="0" y="0" width="{w:.1f}" '
                       f'height="{h:.1f}"/>{rects}</svg><figcaption>page {number}, the passage boxed</figcaption></figure>')
    return "".join(figures)


def _citation(doc: Document, chunk: Chunk, spans: list[tuple[int, int]]) -> str:
    quote = " … ".join(doc.canonical_text[s:t] for s, t in spans)
    where = ", ".join(f"chars {s}–{t}" for s, t in spans)
    day = (chunk.partition_date or doc.partition_date or dt.date.min).isoformat()
    page_no = anchor_page(chunk)
    return (f"“{' '.join(quote.split())}” — {doc.title or doc.doc_id} ({doc.doc_id}), {chunk.locator or ''}"
            + (f", page {page_no}" if page_no is not None else "") + f", {where}; version of {day}; {chunk.chunk_id}")
