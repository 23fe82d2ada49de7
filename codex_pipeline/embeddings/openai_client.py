"""``text-embedding-3-large`` at 1536 dimensions through the official ``openai`` client.

Codex does its own retrying (the client's ``max_retries`` is 0) so that every
request, retry and wait is counted, logged and testable against the loopback
server. Batches respect the API's limits: at most 2,048 inputs and 300,000 tokens
per request, at most 8,191 tokens per input (cl100k_base, counted exactly with
:mod:`codex_pipeline.tokens`). An input over 8,191 tokens is refused before any
request is sent — Codex chunks are capped at 1,500 tokens, so such an input did
not come from a contract-checked chunk table and silently splitting it would hide
that.
"""

from __future__ import annotations

import base64
import email.utils
import functools
import json
import logging
import os
import random
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

import numpy as np
import openai

from codex_pipeline.core.tokens import encoding
from codex_pipeline.embeddings.base import (
    BatchCallback,
    EmbeddingFailed,
    EmbedResult,
    EmptyInput,
    InputTooLong,
    InvalidResponse,
    MissingAPIKey,
)

log = logging.getLogger(__name__)

DEFAULT_MODEL = "text-embedding-3-large"
DEFAULT_DIMENSIONS = 1536
API_MAX_INPUTS = 2048
API_MAX_REQUEST_TOKENS = 300_000
API_MAX_INPUT_TOKENS = 8191
LONG_INPUT_POLICY = f"reject>{API_MAX_INPUT_TOKENS}"


@dataclass(frozen=True)
class RetryPolicy:
    """How a failing request is retried.

    Transient failures (429, 5xx, 408/409, timeouts, connection errors) are retried
    up to ``max_retries`` times per batch with exponential backoff and jitter
    (``base * 2**k`` capped at ``max_delay``; the wait is uniformly drawn from
    the upper half). A ``Retry-After`` / ``retry-after-ms`` header is honoured: the
    wait is at least that long; a server asking for more than ``max_retry_after``
    seconds fails the batch at once. A 200 whose body is unusable (malformed JSON,
    wrong count, index or dimensions) is retried at most ``max_invalid_responses``
    times — a server that keeps answering garbage is a bug, not congestion.
    """

    max_retries: int = 6
    max_invalid_responses: int = 2
    backoff_base: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def backoff(self, retry: int, rng: random.Random) -> float:
        d = min(self.max_delay, self.backoff_base * (2.0**retry))
        return d / 2 + rng.uniform(0, d / 2)


def plan_batches(token_counts: Sequence[int], max_inputs: int, max_tokens: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, end)`` ranges, in order, each within both limits."""
    batches: list[tuple[int, int]] = []
    start, tokens = 0, 0
    for i, n in enumerate(token_counts):
        if i > start and (i - start >= max_inputs or tokens + n > max_tokens):
            batches.append((start, i))
            start, tokens = i, 0
        tokens += n
    if start < len(token_counts):
        batches.append((start, len(token_counts)))
    return batches


def _count_tokens(texts: list[str]) -> list[int]:
    """Exact cl100k_base counts. A plain loop: tiktoken's batch encoder submits one
    thread-pool task per text, which costs more than it saves on chunk-sized texts."""
    enc = encoding()
    return [len(enc.encode_ordinary(t)) for t in texts]


def _retry_after_seconds(headers: object) -> float | None:
    """``retry-after-ms`` / ``retry-after`` (seconds or HTTP date), else None."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name, div in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = get(name)
        if value is None:
            continue
        try:
            return float(value) / div
        except ValueError:
            pass
        parsed = email.utils.parsedate_tz(value)
        if parsed is not None:
            return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


def _safe_url(url: str | None) -> str | None:
    """The URL without credentials or query string, fit for logs and metadata."""
    if not url:
        return url
    p = urllib.parse.urlsplit(url)
    host = p.hostname or ""
    if p.port:
        host = f"{host}:{p.port}"
    return urllib.parse.urlunsplit((p.scheme, host, p.path, "", ""))


class _BatchError(Exception):
    def __init__(self, message: str, kind: str, attempts: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts


class _Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.retries = 0
        self.tokens = 0

    def add(self, requests: int = 0, retries: int = 0, tokens: int = 0) -> None:
        with self.lock:
            self.requests += requests
            self.retries += retries
            self.tokens += tokens


class OpenAIEmbedder:
    """Embeddings from the OpenAI API (or any compatible server at ``base_url``).

    The key comes from ``api_key`` or ``$OPENAI_API_KEY``; the URL from ``base_url``
    or ``$OPENAI_BASE_URL`` (default: the OpenAI API). The key is handed to the
    client and never kept, logged or shown by this object.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        dimensions: int = DEFAULT_DIMENSIONS,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        max_concurrency: int = 4,
        max_batch_inputs: int = API_MAX_INPUTS,
        max_batch_tokens: int = API_MAX_REQUEST_TOKENS,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        version_tag: str = "",
        seed: int | None = None,
    ) -> None:
        if not 1 <= max_batch_inputs <= API_MAX_INPUTS:
            raise ValueError(f"max_batch_inputs must be in 1..{API_MAX_INPUTS}, got {max_batch_inputs}")
        if not API_MAX_INPUT_TOKENS <= max_batch_tokens <= API_MAX_REQUEST_TOKENS:
            raise ValueError(
                f"max_batch_tokens must be in {API_MAX_INPUT_TOKENS}..{API_MAX_REQUEST_TOKENS}, got {max_batch_tokens}"
            )
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if dimensions < 1:
            raise ValueError(f"dimensions must be >= 1, got {dimensions}")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key:
            raise MissingAPIKey(
                f"no OpenAI API key configured for {model}: set the OPENAI_API_KEY environment variable "
                "(or pass api_key=...), or use the local embedder (kind='local', all-MiniLM-L6-v2), "
                "which needs no key and no network"
            )
        url = base_url if base_url is not None else (os.environ.get("OPENAI_BASE_URL") or None)
        self.model = model
        self.dimensions = int(dimensions)
        self.version_tag = version_tag
        self.version = f"{model};dims={self.dimensions};long={LONG_INPUT_POLICY}" + (
            f";tag={version_tag}" if version_tag else ""
        )
        self.base_url = _safe_url(url) or "https://api.openai.com/v1"
        self.max_concurrency = max_concurrency
        self.max_batch_inputs = max_batch_inputs
        self.max_batch_tokens = max_batch_tokens
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        # max_retries=0: every retry is ours, so it is counted, logged and tested.
        self._client = openai.OpenAI(
            api_key=key, base_url=url, organization=organization, max_retries=0, timeout=timeout
        )

    # -- presentation: never the key ---------------------------------------------
    def __repr__(self) -> str:
        return (
            f"OpenAIEmbedder(model={self.model!r}, dimensions={self.dimensions}, base_url={self.base_url!r}, "
            f"max_concurrency={self.max_concurrency}, max_batch_inputs={self.max_batch_inputs}, "
            f"max_batch_tokens={self.max_batch_tokens})"
        )

    def describe(self) -> dict[str, object]:
        """Configuration for run metadata (no secrets)."""
        return {
            "kind": "openai",
            "model": self.model,
            "version": self.version,
            "dimensions": self.dimensions,
            "base_url": self.base_url,
            "max_concurrency": self.max_concurrency,
            "max_batch_inputs": self.max_batch_inputs,
            "max_batch_tokens": self.max_batch_tokens,
            "timeout_s": self.timeout,
            "max_retries": self.retry.max_retries,
            "long_input_policy": LONG_INPUT_POLICY,
        }

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- embedding ----------------------------------------------------------------
    def embed(self, texts: Sequence[str], on_batch: BatchCallback | None = None) -> EmbedResult:
        texts = list(texts)
        n = len(texts)
        d = self.dimensions
        if n == 0:
            return EmbedResult(np.zeros((0, d), np.float32), 0)
        counts = _count_tokens(texts)
        for i, (t, c) in enumerate(zip(texts, counts)):
            if not t:
                raise EmptyInput(f"input {i} is an empty string; the OpenAI API rejects empty inputs", i)
            if c > API_MAX_INPUT_TOKENS:
                raise InputTooLong(
                    f"input {i} has {c:,} tokens; {self.model} accepts at most {API_MAX_INPUT_TOKENS:,} per input "
                    "(Codex chunks are capped at 1,500 tokens, so this text did not come from a contract-checked "
                    "chunk table); nothing was sent",
                    i,
                    c,
                )
        batches = plan_batches(counts, self.max_batch_inputs, self.max_batch_tokens)
        out = np.empty((n, d), np.float32)
        counters = _Counters()
        completed = 0
        failure: BaseException | None = None
        failed_range: tuple[int, int] | None = None
        stop = threading.Event()

        def run(b: int, s: int, e: int) -> np.ndarray | None:
            if stop.is_set():
                return None
            try:
                return self._embed_batch(texts[s:e], b, len(batches), counters)
            except BaseException:
                stop.set()
                raise

        def finished(s: int, e: int, get: Callable[[], np.ndarray | None]) -> None:
            nonlocal completed, failure, failed_range
            try:
                vecs = get()
                if vecs is None:  # skipped after a failure
                    return
                out[s:e] = vecs
                if on_batch is not None:
                    on_batch(np.arange(s, e), vecs)
                completed += e - s
            except BaseException as exc:  # noqa: BLE001 - the others drain, then it is re-raised
                stop.set()
                if failure is None:
                    failure, failed_range = exc, (s, e)

        if self.max_concurrency == 1 or len(batches) == 1:  # no thread hand-offs
            for b, (s, e) in enumerate(batches):
                finished(s, e, functools.partial(run, b, s, e))
                if failure is not None:
                    break
        else:
            # Every batch is queued at once and the pool's size bounds the concurrency, so
            # a worker picks up the next batch without waiting for this thread. After a
            # failure, batches not yet started are skipped; running ones finish and are kept.
            pool = ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(batches)), thread_name_prefix="codex-embed")
            try:
                futures = {pool.submit(run, b, s, e): (s, e) for b, (s, e) in enumerate(batches)}
                for fut in as_completed(futures):
                    finished(*futures[fut], fut.result)
            finally:
                stop.set()
                pool.shutdown(wait=True, cancel_futures=True)
        if failure is not None:
            s, e = failed_range or (0, 0)
            if isinstance(failure, _BatchError):
                raise EmbeddingFailed(
                    f"embedding with {self.model} failed for inputs {s}..{e - 1} ({e - s} inputs): {failure}; "
                    f"{completed} of {n} inputs were embedded and handed to the caller before stopping",
                    kind=failure.kind,
                    attempts=failure.attempts,
                    completed=completed,
                    failed_inputs=n - completed,
                ) from failure
            raise failure
        return EmbedResult(out, counters.requests, counters.retries, counters.tokens)

    def _embed_batch(self, texts: list[str], b: int, nb: int, counters: _Counters) -> np.ndarray:
        """One request, retried per :class:`RetryPolicy`; raises :class:`_BatchError`."""
        policy = self.retry
        attempts = transient = invalid = 0
        while True:
            attempts += 1
            counters.add(requests=1)
            retry_after: float | None = None
            try:
                # The raw response: the client builds, authenticates and sends the request
                # and raises on error statuses; Codex decodes and validates the body itself
                # (stricter than the SDK's lenient model construction, and cheaper).
                raw = self._client.embeddings.with_raw_response.create(
                    input=texts,
                    model=self.model,
                    dimensions=self.dimensions,
                    encoding_format="base64",
                )
                vecs, tokens = self._parse(raw.http_response.content, len(texts))
                counters.add(tokens=tokens)
                return vecs
            except openai.APITimeoutError:
                kind = f"timeout (no answer within {self.timeout:g} s)"
            except openai.APIConnectionError as exc:
                kind = f"connection error ({type(exc.__cause__ or exc).__name__})"
            except openai.APIStatusError as exc:
                status = exc.status_code
                kind = f"HTTP {status}"
                if status == 429:
                    kind = "HTTP 429 rate limited"
                    retry_after = _retry_after_seconds(exc.response.headers)
                elif not (status >= 500 or status in (408, 409)):
                    hint = " (check OPENAI_API_KEY)" if status in (401, 403) else ""
                    raise _BatchError(f"HTTP {status}, not retryable{hint}: {exc.message}", kind, attempts) from exc
                else:
                    retry_after = _retry_after_seconds(exc.response.headers)
            except (InvalidResponse, openai.APIResponseValidationError) as exc:
                invalid += 1
                kind = f"invalid response: {exc}"
                if invalid > policy.max_invalid_responses:
                    raise _BatchError(
                        f"{kind} (after {attempts} attempts; at most {policy.max_invalid_responses} "
                        "retries for unusable responses)",
                        "malformed JSON" if str(exc).startswith("malformed JSON") else "invalid response",
                        attempts,
                    ) from exc
            transient += 1
            counters.add(retries=1)
            if transient > policy.max_retries:
                raise _BatchError(f"{kind}; gave up after {attempts} attempts", kind.split(":")[0], attempts)
            with self._rng_lock:
                delay = policy.backoff(transient - 1, self._rng)
                jitter = self._rng.uniform(0, 1)
            if retry_after is not None and retry_after > 0:
                if retry_after > policy.max_retry_after:
                    raise _BatchError(
                        f"{kind}: server asked to wait {retry_after:g} s, more than max_retry_after="
                        f"{policy.max_retry_after:g} s",
                        kind,
                        attempts,
                    )
                # At least what the server asked, plus a little jitter so parallel
                # batches do not all come back in the same instant.
                delay = retry_after + jitter * min(1.0, 0.1 * retry_after)
            log.warning(
                "embedding batch %d/%d (%d inputs) with %s: %s; retry %d/%d in %.2f s",
                b + 1, nb, len(texts), self.model, kind, transient, policy.max_retries, delay,
            )
            time.sleep(delay)

    def _parse(self, body: bytes, n: int) -> tuple[np.ndarray, int]:
        """Vectors in input order from a response body, or :class:`InvalidResponse`."""
        d = self.dimensions
        try:
            doc = json.loads(body)
        except ValueError as exc:
            raise InvalidResponse(f"malformed JSON ({exc})") from exc
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, list):
            raise InvalidResponse("response has no 'data' list")
        if len(data) != n:
            raise InvalidResponse(f"expected {n} embeddings, got {len(data)}")
        out = np.empty((n, d), np.float32)
        seen = np.zeros(n, dtype=bool)
        for item in data:
            idx = item.get("index") if isinstance(item, dict) else None
            if not isinstance(idx, int) or not 0 <= idx < n or seen[idx]:
                raise InvalidResponse(f"embedding index {idx!r} is missing, out of range or repeated (n={n})")
            emb = item.get("embedding")
            try:
                if isinstance(emb, str):
                    v = np.frombuffer(base64.b64decode(emb, validate=True), dtype="<f4")
                else:  # a server that ignores encoding_format=base64 sends floats
                    v = np.asarray(emb, dtype=np.float32)
            except (ValueError, TypeError) as exc:
                raise InvalidResponse(f"embedding {idx} cannot be decoded: {exc}") from exc
            if v.shape != (d,):
                raise InvalidResponse(f"embedding {idx} has {v.size} dimensions, expected {d}")
            out[idx] = v
            seen[idx] = True
        if not np.isfinite(out).all():
            raise InvalidResponse("response contains NaN or infinite values")
        usage = doc.get("usage")
        tokens = usage.get("prompt_tokens", 0) if isinstance(usage, dict) else 0
        return out, int(tokens or 0)
