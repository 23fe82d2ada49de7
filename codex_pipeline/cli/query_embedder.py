"""The embedder a CLI command embeds queries with, built from the environment.

``CODEX_EMBEDDER`` (or ``--embedder``) picks the kind; ``openai`` reaches
``$OPENAI_BASE_URL`` (the OpenAI API when unset) with ``$OPENAI_API_KEY``, as the code
location's ``embedding`` resource does (``defs/resources.py``). A query is interactive:
two retries, not the six a materialization gets, and their warnings stay quiet (the
error that ends the command says how many attempts were made).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

from codex_pipeline.cli.errors import CliError
from codex_pipeline.embeddings import KINDS, Embedder, make_embedder
from codex_pipeline.embeddings.runtimes import query_options
from codex_pipeline.transport import OpenAIConnection, RetryPolicy

EMBEDDER_ENV = "CODEX_EMBEDDER"
API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
QUERY_RETRY = RetryPolicy(max_retries=2, backoff_base=0.5, max_delay=4.0, max_retry_after=10.0)
QUERY_TIMEOUT_S = 30.0


def configured_embedder(flag: str | None = None) -> str:
    """``--embedder``, else ``$CODEX_EMBEDDER``, else the local model: what every CLI command embeds queries with."""
    kind = (flag or os.environ.get(EMBEDDER_ENV) or "local").strip().lower()
    if kind not in KINDS:
        source = f"--embedder {flag}" if flag else f"{EMBEDDER_ENV}={os.environ.get(EMBEDDER_ENV)}"
        raise CliError(f"unknown embedder {kind!r} ({source}): use {' or '.join(KINDS)}")
    return kind


def openai_connection() -> OpenAIConnection:
    """``$OPENAI_BASE_URL`` with ``$OPENAI_API_KEY``, pressed as an interactive query may be."""
    return OpenAIConnection(
        api_key=os.environ.get(API_KEY_ENV, "").strip(),
        base_url=os.environ.get(BASE_URL_ENV) or None,
        timeout=QUERY_TIMEOUT_S,
        retry=QUERY_RETRY,
    )


def query_embedder(kind: str) -> Embedder:
    """The query embedder of ``kind`` (``local`` or ``openai``)."""
    kind = kind.strip().lower()
    if kind == "openai":
        return make_embedder("openai", connection=openai_connection())
    if kind == "local":
        return make_embedder("local", options=query_options(os.environ))
    return make_embedder(kind)


def where(embedder: Embedder | None) -> str | None:
    """The server an embedder calls (None for a local model)."""
    return getattr(embedder, "base_url", None)


@contextlib.contextmanager
def quiet_retries() -> Iterator[None]:
    """Keep the transport's per-retry warnings off stderr while a command waits for one answer."""
    logger = logging.getLogger("codex_pipeline.transport")
    before = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(before)
