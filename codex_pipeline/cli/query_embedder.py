"""The embedder a CLI command embeds queries with, built from the command's settings.

``--embedder`` (else the settings' ``embedder``, ``$CODEX_EMBEDDER``) picks the kind; ``openai``
reaches the settings' OpenAI server (the OpenAI API when unset) with their key, as the code
location's ``embedding`` resource does (``defs/resources.py``). A query is interactive:
two retries, not the six a materialization gets, and their warnings stay quiet (the
error that ends the command says how many attempts were made).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from codex_pipeline.cli.errors import CliError
from codex_pipeline.embeddings import KINDS, Embedder, make_embedder
from codex_pipeline.settings import CodexSettings, OpenAISettings
from codex_pipeline.transport import OpenAIConnection, RetrySettings

QUERY_RETRY = RetrySettings(max_retries=2, backoff_base=0.5, max_delay=4.0, max_retry_after=10.0)
QUERY_TIMEOUT_S = 30.0


def configured_embedder(settings: CodexSettings, flag: str | None = None) -> str:
    """``--embedder``, else the settings' embedder: what every CLI command embeds queries with."""
    kind = (flag or settings.embedder).strip().lower()
    if kind not in KINDS:
        raise CliError(f"unknown embedder {kind!r} (--embedder {flag}): use {' or '.join(KINDS)}")
    return kind


def openai_connection(openai: OpenAISettings) -> OpenAIConnection:
    """The settings' server and key, pressed as an interactive query may be."""
    return OpenAIConnection(api_key=openai.api_key, base_url=openai.base_url, timeout=QUERY_TIMEOUT_S,
                            retry=QUERY_RETRY)


def query_embedder(kind: str, settings: CodexSettings) -> Embedder:
    """The query embedder of ``kind`` (``local`` or ``openai``) reached as ``settings`` say."""
    kind = kind.strip().lower()
    if kind == "openai":
        return make_embedder("openai", connection=openai_connection(settings.openai))
    if kind == "local":
        return make_embedder("local", options=settings.local_model.for_queries())
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
