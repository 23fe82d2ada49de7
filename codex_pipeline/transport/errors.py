"""What a request to an OpenAI-compatible API raises (no SDK import: cheap for callers to name)."""

from __future__ import annotations


class UnusableResponse(Exception):
    """A 200 whose body cannot be used; raise it from a request to have it retried (a bounded number of times)."""


class RequestFailed(Exception):
    """A request that failed for good. The message is one line and holds no key.

    ``kind`` names the last failure (``HTTP 502``, ``timeout``, ``invalid response``…),
    ``attempts`` the requests sent, ``status`` the HTTP status of a refused request, and
    ``transient`` whether the same request may succeed later (retries ran out).
    """

    def __init__(self, message: str, *, kind: str, attempts: int, status: int | None = None, transient: bool = False):
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts
        self.status = status
        self.transient = transient
