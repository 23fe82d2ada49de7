"""Fixtures for the embedding tests: the loopback OpenAI server and real embedders."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from codex_pipeline.transport import OpenAIConnection, RetrySettings
from codex_pipeline_tests.conftest import real_model_fixture
from codex_pipeline_tests.loopback_openai import LoopbackOpenAI

#: A key that must never show up in logs, reprs, metadata or error messages.
SECRET_KEY = "sk-codex-test-5ecret-Zq81xW"


def loopback_connection(server: LoopbackOpenAI, kw: dict) -> OpenAIConnection:
    """A connection to ``server``: ``api_key``, ``timeout``, ``max_concurrency`` and ``retry`` popped from ``kw``."""
    return OpenAIConnection(
        api_key=kw.pop("api_key", SECRET_KEY),
        base_url=server.base_url,
        timeout=kw.pop("timeout", 5.0),
        max_concurrency=kw.pop("max_concurrency", 4),
        retry=kw.pop("retry", None) or RetrySettings(backoff_base=0.01, max_delay=0.05),
    )


@pytest.fixture
def server() -> Iterator[LoopbackOpenAI]:
    """A loopback ``/v1/embeddings`` server on 127.0.0.1 (random port), checking the key."""
    with LoopbackOpenAI(api_key=SECRET_KEY) as srv:
        yield srv


@pytest.fixture
def make_openai(server: LoopbackOpenAI):
    """Build the real OpenAIEmbedder against the loopback server, with fast backoff.

    ``api_key``, ``timeout``, ``max_concurrency`` and ``retry`` go into its connection."""
    from codex_pipeline.embeddings.openai_client import OpenAIEmbedder

    made = []

    def make(**kw) -> OpenAIEmbedder:
        kw.setdefault("seed", 0)
        e = OpenAIEmbedder(connection=loopback_connection(server, kw), **kw)
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()


@pytest.fixture(scope="session")
@real_model_fixture
def local_embedder():
    """The packaged all-MiniLM-L6-v2, loaded once for the session (its tests are in the slow lane)."""
    from codex_pipeline.embeddings.local_minilm import LocalMiniLMEmbedder

    e = LocalMiniLMEmbedder()
    e.load()
    return e
