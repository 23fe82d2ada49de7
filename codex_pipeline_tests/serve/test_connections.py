"""Issue 40 item 7: slow and idle clients cannot keep real requests out of `codex serve` (a real uvicorn on loopback).

Silent connections, half-sent request heads and an oversized head are opened against a server
with the limits `codex serve` runs with (smaller numbers); a real request still answers, an
unauthenticated POST is refused before its body is sent, and the half-sent heads are closed.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace

import pytest

from codex_pipeline.serve.connections import uvicorn_options
from codex_pipeline.serve.state import ServeState
from codex_pipeline_tests.serve.conftest import Server, start

KEY = "k3y"


@pytest.fixture
def guarded(state: ServeState) -> Iterator[Server]:
    options = uvicorn_options(idle_timeout_s=1, max_connections=20, max_header_bytes=4096)
    yield from start(replace(state.config, api_key=KEY), state, **options)


def _connect(server: Server) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


def _status_line(sock: socket.socket) -> bytes:
    got = b""
    while b"\r\n" not in got:
        chunk = sock.recv(4096)
        if not chunk:
            break
        got += chunk
    return got.split(b"\r\n", 1)[0]


def _closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True


def test_slow_and_idle_clients_leave_room_for_real_requests(guarded: Server) -> None:
    silent = [_connect(guarded) for _ in range(40)]  # twice the connection limit, never a byte
    half = []
    for _ in range(30):  # request heads that never end
        sock = _connect(guarded)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: codex\r\nX-Slow: ")
        half.append(sock)
    try:
        with guarded.client() as client:
            assert client.get("/health").json() == {"status": "ok"}
            assert client.get("/ready").status_code in (200, 503)
            hits = client.post("/search", json={"query": "scaffold fall", "k": 2}, headers={"X-API-Key": KEY})
            assert hits.status_code == 200 and hits.json()["hits"]

        big = _connect(guarded)  # a head past the size limit: refused, not buffered
        big.sendall(b"GET /health HTTP/1.1\r\nHost: codex\r\nX-Big: " + b"a" * 20_000)
        assert _status_line(big).startswith(b"HTTP/1.1 400")
        big.close()

        keyless = _connect(guarded)  # the key is checked before any body is read: the body is never sent
        keyless.sendall(b"POST /search HTTP/1.1\r\nHost: codex\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 60000\r\n\r\n")
        assert _status_line(keyless).startswith(b"HTTP/1.1 401")
        keyless.close()

        assert all(_closed_by_server(sock) for sock in half)  # the head timeout closed every unfinished head
        assert all(_closed_by_server(sock) for sock in silent)
    finally:
        for sock in silent + half:
            sock.close()


def test_a_body_announced_and_not_sent_is_closed(guarded: Server) -> None:
    """A keyed POST whose body stops halfway holds a handler until the body clock closes it."""
    stalled = []
    for _ in range(5):
        sock = _connect(guarded)
        sock.sendall(b"POST /search HTTP/1.1\r\nHost: codex\r\nContent-Type: application/json\r\n"
                     + f"X-API-Key: {KEY}\r\n".encode() + b'Content-Length: 60000\r\n\r\n{"query": "scaf')
        stalled.append(sock)
    try:
        assert all(_closed_by_server(sock) for sock in stalled)
        with guarded.client() as client:
            hits = client.post("/search", json={"query": "scaffold fall", "k": 2}, headers={"X-API-Key": KEY})
            assert hits.status_code == 200 and hits.json()["hits"]
    finally:
        for sock in stalled:
            sock.close()
