"""How ``codex serve`` holds slow and idle clients in: uvicorn's own limits, and the two it lacks.

uvicorn gives a header size limit (h11's ``h11_max_incomplete_event_size``: a head that grows
past it is answered 400 and closed, so four unfinished 100 MB headers cost 16 KiB each), an
idle timeout between requests (``timeout_keep_alive``) and a concurrency limit
(``limit_concurrency``: past it, requests are answered 503). It has no timeout for a request
head and none for a connection that never sends a byte, and idle connections count against
``limit_concurrency``, so 1,500 half-sent heads or 20,000 silent connections kept real
requests out. :class:`GuardedH11Protocol` adds, from those same settings:

- a request head must arrive whole within ``timeout_keep_alive`` seconds of the connection
  opening or of its first byte (trickling bytes does not restart the clock), and a request's
  body within as long again of its head (a body announced and never sent held a handler);
- when a new connection brings the count to ``limit_concurrency``, the connection that has
  waited longest without sending a whole head is closed to make room, so a real request is
  served while idle ones are shed (only when every connection is busy does uvicorn answer 503).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

try:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol
except ImportError as exc:  # the [serve] extra is optional
    raise ImportError("codex serve needs FastAPI and uvicorn: pip install 'codex-pipeline[serve]'") from exc

DEFAULT_IDLE_TIMEOUT_S = 10
DEFAULT_MAX_CONNECTIONS = 1000
DEFAULT_MAX_HEADER_BYTES = 16 * 1024


def uvicorn_options(idle_timeout_s: int = DEFAULT_IDLE_TIMEOUT_S, max_connections: int = DEFAULT_MAX_CONNECTIONS,
                    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> dict[str, Any]:
    """The ``uvicorn.run``/``uvicorn.Config`` keywords that bound connections (see the module's docstring)."""
    return {
        "http": GuardedH11Protocol,
        "timeout_keep_alive": idle_timeout_s,
        "limit_concurrency": max_connections,
        "h11_max_incomplete_event_size": max_header_bytes,
    }


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a request-head timeout and shedding of idle connections at the limit."""

    _head_timer: asyncio.TimerHandle | None = None
    _body_timer: asyncio.TimerHandle | None = None
    _waiting_since: float = 0.0
    _shed: bool = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the head clock, and make room when this connection reaches the limit."""
        super().connection_made(transport)
        self._await_head()
        if self.limit_concurrency is not None:
            self._make_room(self.limit_concurrency)

    def data_received(self, data: bytes) -> None:
        """Stop the head clock once a whole head arrived; start it on the first byte of the next one."""
        super().data_received(data)
        if self._waiting_for_head():
            if self._head_timer is None:
                self._await_head()
        elif self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        if self.conn.their_state is h11.SEND_BODY:
            if self._body_timer is None:
                self._body_timer = self.loop.call_later(self.timeout_keep_alive, self._body_too_slow)
        elif self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        """Drop the clocks with the connection."""
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None
        super().connection_lost(exc)

    def _waiting_for_head(self) -> bool:
        """No request in progress: the client owes us a (whole) request head."""
        return self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)

    def _await_head(self) -> None:
        self._waiting_since = time.monotonic()
        self._head_timer = self.loop.call_later(self.timeout_keep_alive, self._head_too_slow)

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._waiting_for_head() and not self.transport.is_closing():
            self.logger.debug("closing a connection that sent no whole request head in %ss", self.timeout_keep_alive)
            self._close_idle()

    def _body_too_slow(self) -> None:
        self._body_timer = None
        if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
            self.logger.debug("closing a connection whose request body did not arrive in %ss", self.timeout_keep_alive)
            self._close_idle()

    def _close_idle(self) -> None:
        self._shed = True
        self.connections.discard(self)  # at once: uvicorn's limit counts it until its close completes
        self.transport.close()

    def _make_room(self, limit: int) -> None:
        """Close the longest-waiting idle connection when the open ones reach ``limit``."""
        live = [c for c in self.connections if not getattr(c, "_shed", False)]
        if len(live) < limit:
            return
        idle = [c for c in live if c is not self and isinstance(c, GuardedH11Protocol) and c._waiting_for_head()]
        if idle:
            min(idle, key=lambda c: c._waiting_since)._close_idle()
