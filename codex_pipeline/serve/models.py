"""The API's request and response bodies: typed pydantic models, from which FastAPI writes the OpenAPI description
and by which it refuses a malformed request with a 422 naming the field."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from codex_pipeline.serve.settings import MAX_K, MAX_QUERY_CHARS

Span = tuple[int, int]
DATASET_PATTERN = r"^[a-z][a-z0-9_]{0,62}$"
"""A dataset name as the catalog's views spell it (``IDENTIFIER`` in ``warehouse/catalog_views.py``)."""
DOC_ID_PATTERN = r"^urn:aprs:[a-z][a-z0-9_]{0,62}:[^\x00-\x1f]+$"
"""``urn:aprs:<dataset>:<record id>``: what ``doc_id`` looks like (at most 1,024 printable characters)."""


def _date_text(value: object) -> object:
    """A date must be sent as ``YYYY-MM-DD`` text: pydantic would take ``0`` as 1970-01-01."""
    if isinstance(value, dt.date) or (isinstance(value, str) and len(value) == 10):
        return value
    raise ValueError("a date is text YYYY-MM-DD, e.g. \"2026-11-25\"")


IsoDate = Annotated[dt.date, BeforeValidator(_date_text)]
DatasetName = Annotated[StrictStr, Field(pattern=DATASET_PATTERN)]


class SearchRequest(BaseModel):
    """``POST /search``. Limits (``query`` length, ``k``) are the server's; these are the defaults."""

    model_config = ConfigDict(extra="forbid")

    query: StrictStr = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="the query text")
    k: StrictInt = Field(10, ge=1, le=MAX_K, description="hits to return (a JSON integer: not true, not \"3\")")
    mode: Literal["hybrid", "vector", "bm25"] = "hybrid"
    units: Literal["chunks", "propositions"] = "chunks"
    datasets: list[DatasetName] = Field(default_factory=list, max_length=64,
                                        description="datasets to search (default: all)")
    chunk_types: list[StrictStr] = Field(default_factory=list, max_length=64)
    date_from: IsoDate | None = Field(None, description="current version landed on or after (inclusive), YYYY-MM-DD")
    date_to: IsoDate | None = Field(None, description="current version landed on or before (inclusive), YYYY-MM-DD")
    metadata: dict[str, StrictStr | StrictInt | StrictFloat | StrictBool] = Field(
        default_factory=dict, max_length=32, description="equality on keys of the chunk's metadata")


class ContextOut(BaseModel):
    """Text around a hit within its parent (or its document): ``before`` ends where the hit's first span starts,
    ``after`` starts where its last span ends; ``bounds`` is the range they were cut from, ``tokens`` counts both."""

    before: str
    after: str
    parent_chunk_id: str | None
    bounds: Span
    tokens: int


class ChunkHitOut(BaseModel):
    """One retrieved chunk. ``spans`` are its ranges in the document's canonical text, ``evidence`` those that
    answer the query (the spans themselves when they cannot be narrowed exactly); ``ranks`` is its 1-based rank
    per ranking that found it; ``page`` the PDF page of its anchor (null for other files)."""

    dataset: str
    doc_id: str
    chunk_id: str
    chunk_type: str
    section_id: str
    parent_chunk_id: str | None
    score: float
    ranks: dict[str, int]
    locator: str
    page: int | None
    partition_date: dt.date
    spans: list[Span] = Field(description="the chunk's character ranges in its document's canonical text")
    evidence: list[Span] = Field(description="the ranges that answer the query (canonical_text[start:end])")
    evidence_text: list[str]
    text: str
    context: ContextOut
    metadata: dict[str, Any]
    viewer_url: str


class PropositionHitOut(BaseModel):
    """One retrieved proposition: ``spans`` / ``evidence_text`` are the canonical-text ranges it rests on (empty
    when the statement could not be aligned); its parent chunk is its context."""

    dataset: str
    proposition_id: str
    text: str
    score: float
    ranks: dict[str, int]
    doc_id: str
    partition_date: dt.date
    spans: list[Span]
    alignment_score: float | None
    evidence_text: list[str]
    parent_chunk_id: str
    parent_chunk_type: str
    parent_text: str
    extractor: str
    viewer_url: str


class SearchResponse(BaseModel):
    """The hits, best first (chunks or propositions, as ``units`` says); ``took_ms``: the search's time in ms."""

    units: Literal["chunks", "propositions"]
    hits: list[ChunkHitOut] | list[PropositionHitOut]
    warnings: list[str] = Field(description="how the hits were found: e.g. a stale index answered")
    skipped: list[str] = Field(description="datasets not searched (no usable index)")
    datasets: list[str]
    took_ms: float


class RedirectOut(BaseModel):
    """One hop of the redirect table: ``old_chunk_id`` now lives at ``new_chunk_id``."""

    old_chunk_id: str
    new_chunk_id: str
    match: str
    partition_date: dt.date
    chunking_version: str


class ChunkOut(BaseModel):
    """A chunk of the current corpus; ``spans`` are its ranges in its document's canonical text."""

    dataset: str
    doc_id: str
    chunk_id: str
    section_id: str
    chunk_type: str
    seq_index: int
    parent_chunk_id: str | None
    partition_date: dt.date | None
    locator: str | None
    page: int | None
    spans: list[Span]
    text: str
    token_count: int
    metadata: dict[str, Any]
    viewer_url: str


class ChunkResponse(BaseModel):
    """``GET /chunks/{chunk_id}``: the chunk, and the redirects followed to reach it."""

    requested_id: str
    redirected: bool = Field(description="true when the requested id vanished and the redirect table was followed")
    redirects: list[RedirectOut]
    chunk: ChunkOut


class ChunkListResponse(BaseModel):
    """A chunk's relatives (its parent, or its children in reading order)."""

    requested_id: str
    redirected: bool
    of: str = Field(description="the chunk these are the relatives of")
    chunks: list[ChunkOut]


class NeighboursResponse(BaseModel):
    """The chunks just before and after ``of`` in its document's reading order."""

    requested_id: str
    redirected: bool
    of: str
    before: list[ChunkOut]
    after: list[ChunkOut]


class PageOut(BaseModel):
    """A page of a PDF document."""

    number: int = Field(description="1-based PDF page number")
    width: float = Field(description="in PDF points")
    height: float
    image_url: str = Field(description="the page as PNG (GET /page-images)")


class DocumentResponse(BaseModel):
    """``GET /documents/{doc_id}``: a document's text and chunks, every day it landed, its retraction if any."""

    dataset: str
    doc_id: str
    title: str | None
    partition_date: dt.date = Field(description="the version shown: the current one, or the last before a retraction")
    landed_on: list[dt.date] = Field(description="every day a version of the document landed")
    deleted: bool
    deleted_on: dt.date | None
    deleted_by: str | None
    canonical_text: str
    chunks: list[ChunkOut]
    pages: list[PageOut] = Field(description="PDF pages (empty for other files)")
    viewer_url: str


class Health(BaseModel):
    """``GET /health``: the process answers."""

    status: Literal["ok"]


class Ready(BaseModel):
    """``GET /ready``: ``ready`` when an index is loaded and the catalog opens; ``skipped`` names the datasets
    without a usable index, and why; ``damaged`` those with a damaged Parquet partition."""

    ready: bool
    datasets: list[str]
    skipped: dict[str, str]
    catalog: str
    warnings: list[str]
    damaged: dict[str, str] = Field(default_factory=dict, description=(
        "datasets with a damaged Parquet file, each with one line naming the file and the fix: their lookups "
        "answer 503 until the pipeline's rerun of that day rebuilds it; the other datasets are served"))


class ErrorOut(BaseModel):
    """The body of an error response: ``status`` repeats the HTTP status."""

    error: str = Field(description="one line: what was wrong and how to fix it")
    status: int
