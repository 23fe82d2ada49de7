"""A loopback OpenAI-compatible embeddings (and chat: ``loopback_chat.py``) server for tests and benchmarks.

The tests point the real ``openai`` client at it (``base_url``), so retries,
batching and response validation are exercised over real HTTP. Vectors are a
deterministic function of (input text, dimensions), so a test can check every
vector it gets back. A programmable fault queue makes the next requests fail in a
chosen way (429 with ``Retry-After``, 500, a delay past the client timeout,
malformed JSON, wrong dimensions, wrong count, a dropped connection, …).

Run standalone (used by ``bench/bench_embeddings.py`` to keep the server out of
the client's process)::

    python -m codex_pipeline_tests.loopback_openai --latency-ms 20
"""

from __future__ import annotations

import argparse
import base64
import collections
import functools
import hashlib
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from codex_pipeline.core.tokens import count_tokens

# The API limits the server enforces (as api.openai.com does, with a 400).
MAX_INPUTS = 2048
MAX_REQUEST_TOKENS = 300_000
MAX_INPUT_TOKENS = 8191
DEFAULT_DIMENSIONS = {"text-embedding-3-large": 3072, "text-embedding-3-small": 1536, "text-embedding-ada-002": 1536}

FAULT_KINDS = (
    "rate_limit",  # 429 with Retry-After (seconds) — ``retry_after``
    "server_error",  # 5xx — ``status`` (default 500)
    "delay",  # answer correctly after ``delay`` seconds (longer than the client timeout)
    "malformed_json",  # 200, application/json, truncated body
    "wrong_dimensions",  # vectors one float short
    "wrong_count",  # one embedding missing
    "duplicate_index",  # two items claim index 0
    "shuffled",  # valid, but items in reverse order (the index field is right)
    "disconnect",  # close the socket without answering
    "bad_request",  # 400, not retryable
    # chat completions only (loopback_chat.py)
    "refusal",
    "bad_content",
    "missing_entry",
    "not_strings",
    "truncated",
    "invented",
)


@dataclass(frozen=True)
class Fault:
    kind: str
    retry_after: float | None = None
    status: int = 500
    delay: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; known: {', '.join(FAULT_KINDS)}")


@dataclass
class RecordedRequest:
    """What the server saw; ``fault`` is the fault applied to it (None: served normally)."""

    received_at: float  # time.monotonic()
    model: str | None
    dimensions: int | None
    encoding_format: str | None
    inputs: list[str]
    tokens: int
    fault: str | None
    authorized: bool
    status: int = 200

    @property
    def n_inputs(self) -> int:
        return len(self.inputs)


@functools.lru_cache(maxsize=8)
def _projection(dimensions: int) -> np.ndarray:
    # Small integers stored as float32: every dot product with a ±1 vector is an exact
    # integer, so the result does not depend on how BLAS orders the sums (batch size).
    rng = np.random.default_rng(20261124)
    return rng.integers(-8, 9, size=(256, dimensions)).astype(np.float32)


def vectors_for(texts: list[str], dimensions: int) -> np.ndarray:
    """Deterministic unit vectors for ``texts`` (float32 [n, dimensions]), one matmul.

    Each text's SHA-256 bits (as ±1) are projected through a fixed random integer
    matrix; a row depends only on its own text, never on the rest of the batch.
    """
    if not texts:
        return np.zeros((0, dimensions), np.float32)
    digests = np.frombuffer(b"".join(hashlib.sha256(t.encode("utf-8")).digest() for t in texts), np.uint8)
    signs = np.unpackbits(digests.reshape(len(texts), 32), axis=1).astype(np.float32) * 2 - 1
    raw = signs @ _projection(dimensions)  # exact integers (|x| <= 2048)
    # sum of squares of integers, accumulated in float64: exact, whatever the order
    norms = np.sqrt(np.einsum("ij,ij->i", raw, raw, dtype=np.float64)).astype(np.float32)
    raw /= norms[:, None]  # in place: big temporaries are slow on this sandbox
    return raw


def vector_for(text: str, dimensions: int) -> np.ndarray:
    """The vector the server returns for ``text``."""
    return vectors_for([text], dimensions)[0]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real API
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence stderr
        pass

    def parse_request(self) -> bool:
        self._t0 = time.monotonic()  # the request line has arrived: the latency clock starts
        return super().parse_request()

    def _hold(self) -> None:
        """Answer ``latency`` seconds after the request arrived (processing included)."""
        srv = self.server.owner
        remaining = srv.latency - (time.monotonic() - self._t0)
        if remaining > 0:
            srv._stop.wait(remaining)

    def http_fault(self, srv: LoopbackOpenAI, rec: RecordedRequest, fault: Fault | None) -> bool:
        """Answer a fault every endpoint shares (429, 5xx, 400, a dropped connection) and say so;
        a ``delay`` waits here and lets the request be served."""
        kind = fault.kind if fault else None
        if fault is None or kind not in ("rate_limit", "server_error", "bad_request", "disconnect", "delay"):
            return False
        if kind == "delay":
            srv._stop.wait(fault.delay)
            return False
        if kind == "rate_limit":
            rec.status = 429
            headers = {"Retry-After": _fmt_seconds(fault.retry_after)} if fault.retry_after is not None else {}
            self._error(429, "Rate limit reached for requests", "requests", headers)
        elif kind == "server_error":
            rec.status = fault.status
            self._error(fault.status, "The server had an error while processing your request.", "server_error")
        elif kind == "bad_request":
            rec.status = 400
            self._error(400, "Invalid request (injected)", "invalid_request_error")
        else:  # disconnect
            rec.status = 0
            self._hold()
            self.close_connection = True
        return True

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self._hold()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            self.close_connection = True

    def _error(self, status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> None:
        body = json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}})
        self._send(status, body.encode(), headers)

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        srv = self.server.owner
        srv._enter()
        try:
            self._post(srv)
        finally:
            srv._leave()

    def _post(self, srv: LoopbackOpenAI) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") in ("/v1/chat/completions", "/chat/completions"):
            from codex_pipeline_tests.loopback_chat import serve_chat  # propositions (seed 002)

            serve_chat(self, srv, raw)
            return
        if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
            self._error(404, f"no route {self.path}", "invalid_request_error")
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._error(400, "request body is not JSON", "invalid_request_error")
            return
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            self._error(400, "input must be a string or a list of strings", "invalid_request_error")
            return
        model = body.get("model")
        dims = body.get("dimensions")
        fmt = body.get("encoding_format")
        authorized = srv.api_key is None or self.headers.get("Authorization") == f"Bearer {srv.api_key}"
        tokens = [count_tokens(t) for t in inputs]  # (the batch counter spawns threads per call)
        fault = srv._next_fault()
        rec = RecordedRequest(self._t0, model, dims, fmt, inputs, sum(tokens), fault.kind if fault else None, authorized)
        srv._record(rec)

        if not authorized:
            rec.status = 401
            self._error(401, "Incorrect API key provided.", "invalid_request_error")
            return
        # API limits, checked before faults so a batching bug is never masked.
        problem = None
        if not inputs:
            problem = "input must not be empty"
        elif len(inputs) > MAX_INPUTS:
            problem = f"'input' : maximum {MAX_INPUTS} items, got {len(inputs)}"
        elif sum(tokens) > MAX_REQUEST_TOKENS:
            problem = f"Requested {sum(tokens)} tokens, max {MAX_REQUEST_TOKENS} tokens per request"
        else:
            for i, (t, n) in enumerate(zip(inputs, tokens)):
                if n > MAX_INPUT_TOKENS:
                    problem = f"input[{i}] has {n} tokens; the maximum context length is {MAX_INPUT_TOKENS}"
                    break
                if not t:
                    problem = f"input[{i}] is empty"
                    break
        if problem:
            rec.status = 400
            self._error(400, problem, "invalid_request_error")
            return

        kind = fault.kind if fault else None
        if self.http_fault(srv, rec, fault):
            return
        if kind == "malformed_json":
            self._send(200, b'{"object": "list", "data": [{"object": "embedding", "index": 0, "embedd')
            return

        if dims is None:
            dims = DEFAULT_DIMENSIONS.get(model or "", 1536)
        out_dims = dims - 1 if kind == "wrong_dimensions" else dims
        data = []
        for i, v in enumerate(vectors_for(inputs, out_dims)):
            emb: object = base64.b64encode(v.astype("<f4").tobytes()).decode() if fmt == "base64" else v.tolist()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        if kind == "wrong_count":
            data = data[:-1]
        elif kind == "duplicate_index" and len(data) > 1:
            data[1]["index"] = 0
        elif kind == "shuffled":
            data.reverse()
        payload = {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": sum(tokens), "total_tokens": sum(tokens)},
        }
        self._send(200, json.dumps(payload).encode())


def _fmt_seconds(s: float | None) -> str:
    return str(int(s)) if s is not None and float(s).is_integer() else str(s)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr: tuple[str, int], owner: LoopbackOpenAI) -> None:
        self.owner = owner
        super().__init__(addr, _Handler)


@dataclass
class LoopbackOpenAI:
    """``POST /v1/embeddings`` on 127.0.0.1, with a fault queue and request counters.

    Every request is answered ``latency`` seconds after it arrived (the server's own
    processing counts towards it), like an API with a fixed response time. ``api_key``, when set, must be
    sent as ``Authorization: Bearer …`` or the request gets a 401.
    """

    latency: float = 0.0
    api_key: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: collections.deque[Fault | None] = collections.deque()
        self._persistent: Fault | None = None
        self._stop = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._in_flight = 0
        self.max_in_flight = 0  # most requests being handled at the same time

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> LoopbackOpenAI:
        self._stop.clear()
        self._httpd = _Server((self.host, self.port), self)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wakes handlers sleeping on latency / delay faults
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # -- faults ------------------------------------------------------------------
    def push(self, fault: Fault | str | None, times: int = 1, **params: object) -> None:
        """Apply ``fault`` to the next ``times`` requests (``None``: serve them normally)."""
        f = Fault(fault, **params) if isinstance(fault, str) else fault  # type: ignore[arg-type]
        with self._lock:
            self._faults.extend([f] * times)

    def fail_always(self, fault: Fault | str | None, **params: object) -> None:
        """Apply ``fault`` to every request once the queue is empty (``None`` to heal)."""
        with self._lock:
            self._persistent = Fault(fault, **params) if isinstance(fault, str) else fault  # type: ignore[arg-type]

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.popleft() if self._faults else self._persistent

    # -- counters ----------------------------------------------------------------
    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _record(self, rec: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(rec)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0
            self._faults.clear()
            self._persistent = None

    @property
    def request_count(self) -> int:
        return len(self.requests)

    @property
    def input_count(self) -> int:
        return sum(r.n_inputs for r in self.requests)

    @property
    def served(self) -> list[RecordedRequest]:
        """Requests answered with a 200 and correct vectors."""
        return [r for r in self.requests if r.status == 200 and r.fault in (None, "shuffled")]

    def served_inputs(self) -> list[str]:
        return [t for r in self.served for t in r.inputs]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency-ms", type=float, default=0.0)
    ap.add_argument("--api-key", default=None)
    args = ap.parse_args(argv)
    srv = LoopbackOpenAI(latency=args.latency_ms / 1000, api_key=args.api_key, port=args.port).start()
    print(srv.base_url, flush=True)  # the parent reads the URL from the first line
    try:
        sys.stdin.read()  # run until the parent closes stdin
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
