"""The one way Codex sends a request to an OpenAI-compatible API: one client, one retry policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import openai

from codex_pipeline.transport.connection import OpenAIConnection, redact
from codex_pipeline.transport.retry import Retrier, Tally

T = TypeVar("T")


def open_client(connection: OpenAIConnection) -> openai.OpenAI:
    """The SDK client for ``connection``, with the SDK's own retries off: :mod:`.retry` does them,
    so that every retry is counted, logged and waits as long as ``Retry-After`` asks."""
    return openai.OpenAI(
        api_key=connection.api_key,
        base_url=connection.base_url or None,
        organization=connection.organization,
        max_retries=0,
        timeout=connection.timeout,
    )


class OpenAITransport:
    """The SDK client for a connection, each request run under the connection's retry policy.

    Embeddings and chat build their request and parse the answer; this owns sending
    it, retrying it, counting it and keeping the key out of every message.
    ``seed`` makes the backoff jitter reproducible.
    """

    def __init__(self, connection: OpenAIConnection, *, seed: int | None = None) -> None:
        self.connection = connection
        self.base_url = connection.shown_url
        self._client = open_client(connection)
        self._retrier = Retrier(connection.retry, timeout=connection.timeout, redact=self.redact, seed=seed)

    def __repr__(self) -> str:
        return f"OpenAITransport(base_url={self.base_url!r}, timeout={self.connection.timeout:g})"

    def redact(self, text: str) -> str:
        """``text`` without the key (or anything shaped like one)."""
        return redact(text, self.connection.api_key)

    def send(self, request: Callable[[openai.OpenAI], T], *, label: str, tally: Tally) -> T:
        """``request(client)``, retried; raises :class:`~.retry.RequestFailed` when it cannot succeed.

        ``label`` opens each retry's log line; ``tally`` counts requests and retries.
        """
        return self._retrier.run(lambda: request(self._client), label=label, tally=tally)

    def close(self) -> None:
        """Closes the SDK client and its HTTP connections."""
        self._client.close()
