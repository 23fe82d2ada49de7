"""``text-embedding-3-large`` at 1536 dimensions through the official ``openai`` client.

Requests go through the shared transport (:mod:`codex_pipeline.transport`): one
client factory and one retry policy, every request and retry counted. Batches
respect the API's limits: at most 2,048 inputs and 300,000 tokens per request, at
most 8,191 tokens per input (cl100k_base, counted exactly with
:mod:`codex_pipeline.core.tokens`). An input over 8,191 tokens is refused before any
request is sent: Codex chunks are capped at 1,500 tokens, so such an input did not
come from a contract-checked chunk table and silently splitting it would hide that.
"""

from __future__ import annotations

import base64
import functools
import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

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
from codex_pipeline.transport import OpenAIConnection, RequestFailed
from codex_pipeline.transport.client import OpenAITransport
from codex_pipeline.transport.retry import Tally

DEFAULT_MODEL = "text-embedding-3-large"
DEFAULT_DIMENSIONS = 1536
API_MAX_INPUTS = 2048
API_MAX_REQUEST_TOKENS = 300_000
API_MAX_INPUT_TOKENS = 8191
LONG_INPUT_POLICY = f"reject>{API_MAX_INPUT_TOKENS}"


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


class OpenAIEmbedder:
    """Embeddings from the OpenAI API (or any compatible server: ``connection.base_url``).

    The key and URL come in ``connection``, built by the caller (the Dagster resource
    reads ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``); the key is never logged or shown.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        dimensions: int = DEFAULT_DIMENSIONS,
        *,
        connection: OpenAIConnection | None = None,
        max_batch_inputs: int = API_MAX_INPUTS,
        max_batch_tokens: int = API_MAX_REQUEST_TOKENS,
        version_tag: str = "",
        seed: int | None = None,
    ) -> None:
        if not 1 <= max_batch_inputs <= API_MAX_INPUTS:
            raise ValueError(f"max_batch_inputs must be in 1..{API_MAX_INPUTS}, got {max_batch_inputs}")
        if not API_MAX_INPUT_TOKENS <= max_batch_tokens <= API_MAX_REQUEST_TOKENS:
            raise ValueError(
                f"max_batch_tokens must be in {API_MAX_INPUT_TOKENS}..{API_MAX_REQUEST_TOKENS}, got {max_batch_tokens}"
            )
        if dimensions < 1:
            raise ValueError(f"dimensions must be >= 1, got {dimensions}")
        if connection is None or not connection.api_key:
            raise MissingAPIKey(
                f"no OpenAI API key configured for {model}: set the OPENAI_API_KEY environment variable "
                "(or pass connection=OpenAIConnection(api_key=...)), or use the local embedder (kind='local', "
                "all-MiniLM-L6-v2), which needs no key and no network"
            )
        self.model = model
        self.dimensions = int(dimensions)
        self.version_tag = version_tag
        self.version = f"{model};dims={self.dimensions};long={LONG_INPUT_POLICY}" + (
            f";tag={version_tag}" if version_tag else ""
        )
        self.connection = connection
        self.base_url = connection.shown_url
        self.max_concurrency = connection.max_concurrency
        self.max_batch_inputs = max_batch_inputs
        self.max_batch_tokens = max_batch_tokens
        self.timeout = connection.timeout
        self.retry = connection.retry
        self._transport = OpenAITransport(connection, seed=seed)

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
            "max_batch_inputs": self.max_batch_inputs,
            "max_batch_tokens": self.max_batch_tokens,
            **self.connection.describe(),
            "long_input_policy": LONG_INPUT_POLICY,
        }

    def close(self) -> None:
        """Closes the transport's HTTP client."""
        self._transport.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- embedding ----------------------------------------------------------------
    def embed(self, texts: Sequence[str], on_batch: BatchCallback | None = None) -> EmbedResult:
        """See :meth:`Embedder.embed`; batches are bounded by inputs and tokens, ``max_concurrency`` in flight.

        Nothing is sent if an input is empty (:class:`EmptyInput`) or over the API's input
        limit (:class:`InputTooLong`). ``on_batch`` gets batches in completion order; after a
        failed request, running batches finish and are handed over, the rest are skipped,
        and it is raised as :class:`EmbeddingFailed`, saying how many inputs were embedded.
        """
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
        tally = Tally()
        completed = 0
        failure: BaseException | None = None
        failed_range: tuple[int, int] | None = None
        stop = threading.Event()

        def run(b: int, s: int, e: int) -> np.ndarray | None:
            if stop.is_set():
                return None
            try:
                return self._embed_batch(texts[s:e], b, len(batches), tally)
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
            if isinstance(failure, RequestFailed):
                raise EmbeddingFailed(
                    f"embedding with {self.model} failed for inputs {s}..{e - 1} ({e - s} inputs): {failure}; "
                    f"{completed} of {n} inputs were embedded and handed to the caller before stopping",
                    kind=failure.kind,
                    attempts=failure.attempts,
                    completed=completed,
                    failed_inputs=n - completed,
                ) from failure
            raise failure
        return EmbedResult(out, tally.requests, tally.retries, tally.input_tokens)

    def _embed_batch(self, texts: list[str], b: int, nb: int, tally: Tally) -> np.ndarray:
        """One request through the transport (retried there); raises :class:`RequestFailed`."""

        def request(client: openai.OpenAI) -> np.ndarray:
            # The raw response: the client builds, authenticates and sends the request and
            # raises on error statuses; Codex decodes and validates the body itself
            # (stricter than the SDK's lenient model construction, and cheaper).
            raw = client.embeddings.with_raw_response.create(
                input=texts, model=self.model, dimensions=self.dimensions, encoding_format="base64"
            )
            vecs, tokens = self._parse(raw.http_response.content, len(texts))
            tally.add(input_tokens=tokens)
            return vecs

        label = f"embedding batch {b + 1}/{nb} ({len(texts)} inputs) with {self.model}"
        return self._transport.send(request, label=label, tally=tally)

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
