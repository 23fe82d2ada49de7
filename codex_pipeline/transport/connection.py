"""Where an OpenAI-compatible API is and how to talk to it: one value for embeddings and chat.

The key is handed to the client and nowhere else: it is left out of ``repr`` and of
:meth:`OpenAIConnection.describe`, and :func:`redact` scrubs it (and anything shaped
like an OpenAI key) from text that may reach a log line or an error message.
"""

from __future__ import annotations

import random
import re
import urllib.parse
from dataclasses import dataclass, field

OPENAI_API_URL = "https://api.openai.com/v1"
_KEY_SHAPE = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{4,}")


@dataclass(frozen=True)
class RetrySettings:
    """How a failing request is retried.

    Transient failures (429, 5xx, 408/409, timeouts, connection errors) are retried
    up to ``max_retries`` times per request with exponential backoff and jitter
    (``base * 2**k`` capped at ``max_delay``; the wait is drawn from its upper half).
    A ``Retry-After`` / ``retry-after-ms`` header sets the least wait; asking for more
    than ``max_retry_after`` seconds fails the request at once. Unusable 200s are
    retried at most ``max_invalid_responses`` times.
    """

    max_retries: int = 6
    max_invalid_responses: int = 2
    backoff_base: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def backoff(self, retry: int, rng: random.Random) -> float:
        """Seconds before retry ``retry`` (from 0): drawn from the upper half of ``min(max_delay, base * 2**retry)``."""
        d = min(self.max_delay, self.backoff_base * (2.0**retry))
        return d / 2 + rng.uniform(0, d / 2)


@dataclass(frozen=True, repr=False)
class OpenAIConnection:
    """An OpenAI-compatible server, the key for it and how hard to press it.

    ``base_url`` None means the OpenAI API. ``max_concurrency`` bounds the requests
    one embed or extract call keeps in flight; ``retry`` says how a failing request
    is retried (see :class:`RetrySettings`).
    """

    api_key: str = ""
    base_url: str | None = None
    organization: str | None = None
    timeout: float = 60.0
    max_concurrency: int = 4
    retry: RetrySettings = field(default_factory=RetrySettings)

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {self.timeout}")

    def __repr__(self) -> str:  # never the key, nor credentials in the URL
        return (f"OpenAIConnection(base_url={self.shown_url!r}, timeout={self.timeout:g}, "
                f"max_concurrency={self.max_concurrency}, retry={self.retry})")

    @property
    def shown_url(self) -> str:
        """The base URL fit for logs and metadata: no credentials, no query string."""
        return safe_url(self.base_url) or OPENAI_API_URL

    def describe(self) -> dict[str, object]:
        """The settings for run metadata (never the key)."""
        return {
            "base_url": self.shown_url,
            "timeout_s": self.timeout,
            "max_concurrency": self.max_concurrency,
            "max_retries": self.retry.max_retries,
        }


def safe_url(url: str | None) -> str | None:
    """``url`` without user, password or query string."""
    if not url:
        return url
    p = urllib.parse.urlsplit(url)
    host = p.hostname or ""
    if p.port:
        host = f"{host}:{p.port}"
    return urllib.parse.urlunsplit((p.scheme, host, p.path, "", ""))


def redact(text: str, key: str = "") -> str:
    """``text`` with ``key`` and every OpenAI-key-shaped word replaced: servers echo keys in errors.

    (A "key" under 8 characters is a placeholder, not a secret: replacing it would mangle the text.)"""
    if len(key) >= 8:
        text = text.replace(key, "[redacted]")
    return _KEY_SHAPE.sub("sk-[redacted]", text)
