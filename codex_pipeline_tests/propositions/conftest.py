"""Fixtures for the proposition tests: the loopback chat server, real extractors, a chunked partition."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES
from codex_pipeline_tests.loopback_openai import LoopbackOpenAI

KEY = "sk-codex-propositions-7est"
DAY = dt.date(2026, 11, 24)


@pytest.fixture
def chat_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackOpenAI]:
    """A loopback OpenAI server (chat + embeddings) on a random port, checking the key."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with LoopbackOpenAI(api_key=KEY) as srv:
        yield srv


@pytest.fixture
def make_chat(chat_server: LoopbackOpenAI):
    """The real OpenAIChatExtractor against the loopback server, with fast backoff
    (``timeout``, ``max_concurrency`` and ``retry`` go into its connection)."""
    from codex_pipeline.propositions.openai_chat import OpenAIChatExtractor
    from codex_pipeline.transport import OpenAIConnection, RetrySettings

    made = []

    def make(**kw):
        kw.setdefault("seed", 0)
        connection = OpenAIConnection(
            KEY, chat_server.base_url, timeout=kw.pop("timeout", 5.0), max_concurrency=kw.pop("max_concurrency", 4),
            retry=kw.pop("retry", None) or RetrySettings(backoff_base=0.01, max_delay=0.05),
        )
        e = OpenAIChatExtractor(connection=connection, **kw)
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()


def write_chunked(wh: Warehouse, dataset: str = "osha_safety", day: dt.date = DAY) -> None:
    """Raw and contract-checked chunks of a fixture dataset, written as the assets would (no Dagster needed here)."""
    spec = get_dataset(dataset)
    loaded = spec.load_day(FIXTURES / dataset)
    raw = steps.ingest(spec, day, loaded.documents, loaded.rejects)
    wh.write(raw.table, dataset, "raw", day)
    out = steps.chunk(spec, day, steps.documents_from_raw(raw.table))
    wh.write(out.table, dataset, "chunks", day, stamp={"chunking_version": spec.chunking_version})
