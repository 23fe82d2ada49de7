"""``POST /search`` (and the viewer's search page) over the process's one Retriever."""

from __future__ import annotations

import json
import time

from codex_pipeline.retrieval import Filters, Hit
from codex_pipeline.serve import convert
from codex_pipeline.serve.lookup import LookupFailed
from codex_pipeline.serve.models import SearchRequest, SearchResponse
from codex_pipeline.serve.settings import ServeSettings
from codex_pipeline.serve.state import ServeState
from codex_pipeline.warehouse.catalog_views import IDENTIFIER


def check_limits(cfg: ServeSettings, req: SearchRequest) -> None:
    """The server's own limits (``--max-k``, ``--max-query-chars``), tighter than the schema's; 422 naming the field."""
    if len(req.query) > cfg.max_query_chars:
        raise LookupFailed(422, f"query: {len(req.query)} characters, this server takes at most {cfg.max_query_chars}")
    if req.k > cfg.max_k:
        raise LookupFailed(422, f"k: {req.k}, this server returns at most {cfg.max_k} hits: ask for fewer")
    bad = [d for d in req.datasets if not IDENTIFIER.fullmatch(d)]
    if bad:
        raise LookupFailed(422, f"datasets: {bad[0][:80]!r} is not a dataset name (lower-case letters, digits, _)")


def search(state: ServeState, req: SearchRequest, cfg: ServeSettings | None = None) -> SearchResponse:
    """``req`` answered by the process's Retriever, within ``cfg``'s limits (default: the state's)."""
    check_limits(cfg or state.config, req)
    filters = Filters.of(req.datasets, req.chunk_types, req.date_from, req.date_to, req.metadata)
    t0 = time.perf_counter()
    with state.lock:
        if req.units == "propositions":
            props = state.retriever.search_propositions(req.query, k=req.k, mode=req.mode, filters=filters)
            hits_out: list = [convert.proposition_hit(h) for h in props]
            warnings, skipped = props.warnings, props.skipped
        else:
            hits = state.retriever.search(req.query, k=req.k, mode=req.mode, filters=filters)
            hits_out = [convert.chunk_hit(h, _page(state, h)) for h in hits]
            warnings, skipped = hits.warnings, hits.skipped
        datasets = state.retriever.datasets
    return SearchResponse(units=req.units, hits=hits_out, warnings=[*warnings, *state.warnings()],
                          skipped=list(skipped), datasets=datasets, took_ms=(time.perf_counter() - t0) * 1000)


def _page(state: ServeState, hit: Hit) -> int | None:
    """The page of the hit's anchor (PDF pages), from its index row; called under the lock."""
    index = state.retriever.index(hit.dataset)
    row = index.row_of(hit.chunk_id)
    if row is None:
        return None
    anchor = str(index.row(row).get("evidence_anchor") or "{}")
    try:
        page = json.loads(anchor).get("page")
    except json.JSONDecodeError:
        return None
    return page if isinstance(page, int) else None
