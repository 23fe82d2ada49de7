"""Talking to OpenAI-compatible APIs: one connection value, one client factory, one retry policy.

Embeddings and proposition extraction both send their requests through
:class:`~.client.OpenAITransport` (``transport.client``; it loads the SDK and
tenacity, so it is imported where a request is sent). This package imports
``core`` only and reads no environment: the key and URL arrive in an
:class:`OpenAIConnection` built at the edge.
"""

from codex_pipeline.transport.connection import OPENAI_API_URL, OpenAIConnection, RetrySettings, redact, safe_url
from codex_pipeline.transport.errors import RequestFailed, UnusableResponse

__all__ = ["OPENAI_API_URL", "OpenAIConnection", "RequestFailed", "RetrySettings", "UnusableResponse", "redact", "safe_url"]
