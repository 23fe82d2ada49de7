"""The ASGI app: JSON API, evidence viewer, health and metrics, on FastAPI.

Why FastAPI (on Starlette, served by uvicorn): the OpenAPI description is generated from the
typed request/response models (:mod:`codex_pipeline.serve.models`), so it cannot drift from
the code, and a malformed request is refused by validation with a 4xx naming the field
before any handler runs. Both are maintained, on the package index, and need no build step.

Every error is JSON ``{"error": "<one line>", "status": N}``. The API key, when set, is
compared in constant time; ``/health`` and ``/ready`` stay open for probes.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote

try:
    from fastapi import FastAPI, Path, Query, Request
    from fastapi.exceptions import RequestValidationError, StarletteHTTPException
    from fastapi.middleware.cors import CORSMiddleware
    from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
except ImportError as exc:  # the [serve] extra is optional
    raise ImportError("codex serve needs FastAPI and uvicorn: pip install 'codex-pipeline[serve]'",
                      name=exc.name) from exc

from codex_pipeline.core.ids import CHUNK_ID_PATTERN
from codex_pipeline.retrieval import IndexMissing, IndexOutdated
from codex_pipeline.serve import convert, viewer
from codex_pipeline.serve.lookup import Catalog, LookupFailed
from codex_pipeline.serve.models import (
    DATASET_PATTERN,
    DOC_ID_PATTERN,
    ChunkListResponse,
    ChunkResponse,
    DocumentResponse,
    ErrorOut,
    Health,
    NeighboursResponse,
    Ready,
    SearchRequest,
    SearchResponse,
)
from codex_pipeline.serve.pages import landed_pdf, page_png
from codex_pipeline.serve.search import search
from codex_pipeline.serve.settings import API_KEY_COOKIE, ServeSettings
from codex_pipeline.serve.state import ServeState

API_KEY_HEADER = "X-API-Key"
OPEN_PATHS = frozenset({"/health", "/ready", "/view/login"})
ERRORS: dict[int | str, dict[str, Any]] = {s: {"model": ErrorOut} for s in (400, 401, 404, 410, 413, 422, 503)}

DATASET_QUERY: Any = Query(None, max_length=63, pattern=DATASET_PATTERN,
                           description="look only in this dataset (a name of the catalog: lowercase, digits, _)")
# Ids are declared with their pattern in the OpenAPI description and checked by the handlers, which answer 400 with
# what an id looks like (a plain 422 "should match pattern" would not say it).
CHUNK_ID_PATH: Any = Path(json_schema_extra={"pattern": CHUNK_ID_PATTERN}, description="urn:aprs:chunk:<16 hex>")
DOC_ID_PATH: Any = Path(json_schema_extra={"pattern": DOC_ID_PATTERN}, description="urn:aprs:<dataset>:<record id>")


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers)

def create_app(config: ServeSettings, state: ServeState | None = None) -> FastAPI:
    """The app for ``config``; ``state`` (an opened :class:`ServeState`) is made from the config when not given."""
    state = state or ServeState.open(config)
    catalog = Catalog(state.warehouse, state.locate)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        state.start()
        try:
            yield
        finally:
            state.stop()

    app = FastAPI(title="Codex search", version="1", lifespan=lifespan,
                  description="Hybrid search over the current corpus, with exact evidence spans; an evidence viewer at /view.")
    app.state.codex = state
    _guard(app, state, config)
    if config.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(config.cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=[API_KEY_HEADER, "Content-Type"])
    _errors(app)
    _api(app, state, catalog, config)
    _probes(app, state, catalog)
    viewer.register(app, state, catalog, config)
    return app

def _guard(app: FastAPI, state: ServeState, cfg: ServeSettings) -> None:
    """Metrics, the API key and the body size limit, for every request."""

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        t0 = time.perf_counter()
        response = _refuse(request, cfg) or await call_next(request)
        route = request.scope.get("route")
        template = getattr(route, "path", None) or "unmatched"
        state.metrics.observe(template, request.method, response.status_code, time.perf_counter() - t0)
        return response

def _refuse(request: Request, cfg: ServeSettings) -> Response | None:
    """The 4xx a request gets before any handler: no or a wrong API key, a body too large or of unknown length."""
    if cfg.api_key and request.url.path not in OPEN_PATHS and request.method != "OPTIONS":
        given = request.headers.get(API_KEY_HEADER) or unquote(request.cookies.get(API_KEY_COOKIE) or "")
        if not hmac.compare_digest(given.encode(), cfg.api_key.encode()):
            if request.url.path.startswith("/view") and not given:
                return RedirectResponse("/view/login", status_code=303)
            what = "a wrong" if given else "no"
            return _error(401, f"{what} API key: send it in the {API_KEY_HEADER} header", {"WWW-Authenticate": API_KEY_HEADER})
    if request.method in ("POST", "PUT", "PATCH"):
        length = request.headers.get("content-length")
        if length is None:
            return _error(411, "a request body needs a Content-Length header")
        if not length.isdigit() or int(length) > cfg.max_body_bytes:
            return _error(413, f"request body of {length} bytes: this server takes at most {cfg.max_body_bytes}")
    return None

def _errors(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "body"
        return _error(422, f"{where}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = "no such endpoint: see /docs for the API" if exc.status_code == 404 else str(exc.detail)
        return _error(exc.status_code, message, getattr(exc, "headers", None))

    @app.exception_handler(LookupFailed)
    async def lookup_failed(_: Request, exc: LookupFailed) -> JSONResponse:
        return _error(exc.status, str(exc))

    @app.exception_handler(IndexMissing)
    async def index_missing(_: Request, exc: IndexMissing) -> JSONResponse:
        return _error(404, " ".join(str(exc).split()))

    @app.exception_handler(IndexOutdated)
    async def index_outdated(_: Request, exc: IndexOutdated) -> JSONResponse:
        return _error(503, " ".join(str(exc).split()))

def _api(app: FastAPI, state: ServeState, catalog: Catalog, config: ServeSettings) -> None:
    @app.post("/search", response_model=SearchResponse, responses=ERRORS, tags=["search"])
    def post_search(body: SearchRequest) -> SearchResponse:
        """The ``k`` best chunks (or propositions) of the current corpus, each with its exact evidence spans."""
        return search(state, body, config)

    @app.get("/chunks/{chunk_id}", response_model=ChunkResponse, responses=ERRORS, tags=["chunks"])
    def get_chunk(chunk_id: str = CHUNK_ID_PATH, dataset: str | None = DATASET_QUERY) -> ChunkResponse:
        """A chunk of the current corpus; an id that vanished is followed through the redirect table (``redirected``)."""
        found = catalog.chunk(chunk_id, dataset)
        return ChunkResponse(requested_id=chunk_id, redirected=bool(found.redirects),
                             redirects=convert.redirects(found), chunk=convert.chunk_out(found.chunk, found.dataset))

    @app.get("/chunks/{chunk_id}/parent", response_model=ChunkListResponse, responses=ERRORS, tags=["chunks"])
    def get_parent(chunk_id: str = CHUNK_ID_PATH, dataset: str | None = DATASET_QUERY) -> ChunkListResponse:
        """The chunk's parent (an empty list for a top-level chunk)."""
        found = catalog.chunk(chunk_id, dataset)
        parent = found.collection.parent(found.chunk)
        return ChunkListResponse(requested_id=chunk_id, redirected=bool(found.redirects), of=found.chunk.chunk_id,
                                 chunks=[convert.chunk_out(parent, found.dataset)] if parent else [])

    @app.get("/chunks/{chunk_id}/children", response_model=ChunkListResponse, responses=ERRORS, tags=["chunks"])
    def get_children(chunk_id: str = CHUNK_ID_PATH, dataset: str | None = DATASET_QUERY) -> ChunkListResponse:
        """The chunk's direct children, in reading order."""
        found = catalog.chunk(chunk_id, dataset)
        return ChunkListResponse(requested_id=chunk_id, redirected=bool(found.redirects), of=found.chunk.chunk_id,
                                 chunks=[convert.chunk_out(c, found.dataset) for c in found.collection.children(found.chunk)])

    @app.get("/chunks/{chunk_id}/neighbours", response_model=NeighboursResponse, responses=ERRORS, tags=["chunks"])
    def get_neighbours(chunk_id: str = CHUNK_ID_PATH, dataset: str | None = DATASET_QUERY,
                       before: int = Query(1, ge=0, le=20), after: int = Query(1, ge=0, le=20)) -> NeighboursResponse:
        """Chunks just before and after in the document's reading order."""
        found = catalog.chunk(chunk_id, dataset)
        nb = found.collection.neighbours(found.chunk, before, after)
        return NeighboursResponse(requested_id=chunk_id, redirected=bool(found.redirects), of=found.chunk.chunk_id,
                                  before=[convert.chunk_out(c, found.dataset) for c in nb.before],
                                  after=[convert.chunk_out(c, found.dataset) for c in nb.after])

    @app.get("/documents/{doc_id:path}", response_model=DocumentResponse, responses=ERRORS, tags=["documents"])
    def get_document(doc_id: str = DOC_ID_PATH, dataset: str | None = DATASET_QUERY) -> DocumentResponse:
        """A document's current version (text and chunks), every day it landed, and its retraction if any."""
        return convert.document(catalog.document(doc_id, dataset))

    @app.get("/page-images", response_class=Response, tags=["documents"],
             responses={200: {"content": {"image/png": {}}}, **ERRORS})
    def get_page_image(doc_id: str = Query(..., max_length=1024, json_schema_extra={"pattern": DOC_ID_PATTERN}),
                       page: int = Query(..., ge=1, le=100_000),
                       dataset: str | None = DATASET_QUERY) -> Response:
        """A page of a PDF document as PNG (the version shown by ``GET /documents``), for drawing a passage's boxes."""
        doc = catalog.document(doc_id, dataset)
        if not doc.pages:
            raise LookupFailed(404, f"{doc_id[:200]} is not a PDF: only PDF pages have images")
        path = landed_pdf(state.warehouse, doc.dataset, doc.partition_date, doc.source_file)
        return Response(page_png(path, page), media_type="image/png", headers={"Cache-Control": "private, max-age=300"})

def _probes(app: FastAPI, state: ServeState, catalog: Catalog) -> None:
    @app.get("/health", response_model=Health, tags=["operations"])
    def health() -> Health:
        """The process answers (liveness)."""
        return Health(status="ok")

    @app.get("/ready", response_model=Ready, responses={503: {"model": Ready}}, tags=["operations"])
    def ready() -> Any:
        """An index is loaded and the catalog opens read-only (readiness): 503 otherwise."""
        with state.lock:
            datasets, skipped = state.retriever.datasets, dict(state.retriever.skipped)
        ok, catalog_says = catalog.readable()
        damaged = catalog.damaged() if ok else {}
        body = Ready(ready=bool(datasets) and ok, datasets=datasets, skipped=skipped, catalog=catalog_says,
                     warnings=[*state.warnings(), *damaged.values()], damaged=damaged)
        return body if body.ready else JSONResponse(body.model_dump(mode="json"), status_code=503)

    @app.get("/metrics", response_class=PlainTextResponse, tags=["operations"])
    def metrics() -> PlainTextResponse:
        """Prometheus text format: requests, latency histograms, index age per dataset."""
        return PlainTextResponse(state.metrics.render(state.index_ages()), media_type="text/plain; version=0.0.4")

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/view", status_code=307)

