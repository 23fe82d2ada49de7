"""The OpenAI chat extractor: the seed's recipe (``gpt-4o-mini``, JSON response format).

Chunks are sent in batches (at most ``max_batch_chunks`` chunks and
``max_batch_tokens`` prompt tokens per request) as a JSON object; the model answers
``{"results": [{"id", "propositions": [...]}, ...]}`` with pronouns resolved. Up to
``max_concurrency`` requests are in flight. Retrying follows the embedder's
:class:`~codex_pipeline.embeddings.openai_client.RetryPolicy` (429 / 5xx / timeouts
retried with backoff and jitter, ``Retry-After`` honoured; the client's own
``max_retries`` is 0 so every retry is counted), and so do the key and URL rules.

Nothing one chunk does can fail the partition: a refusal, a truncated or malformed
answer (after ``max_invalid_responses`` retries) or a batch whose retries ran out
rejects its chunks with the reason; an entry that is not a list of strings rejects
that chunk only. Only configuration errors (no key, HTTP 401/403/404) raise. Every
request first reserves its worst-case cost against the :class:`~.cost.Budget`;
once a cap is reached no further request is sent and the remaining chunks are
returned ``deferred``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

import openai

from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.embeddings.base import MissingAPIKey
from codex_pipeline.embeddings.openai_client import RetryPolicy, _retry_after_seconds, _safe_url
from codex_pipeline.propositions.align import ChunkAligner
from codex_pipeline.propositions.base import ChunkInput, Extraction, ExtractResult, ExtractStats, Statement
from codex_pipeline.propositions.cost import DEFAULT_PRICES, Budget, CostMeter, Price, price_for

log = logging.getLogger(__name__)

NAME = "openai-chat"
VERSION = "1"
DEFAULT_MODEL = "gpt-4o-mini"
MESSAGE_OVERHEAD_TOKENS = 4  # per chat message, as OpenAI's token-counting guide adds

SYSTEM_PROMPT = """\
You convert text into atomic propositions.
Each proposition is a single, self-contained factual statement that can be understood without the text around it:
- resolve pronouns and other references ("it", "they", "the company", "this permit") to the full name they stand for;
- split statements joined by "and", lists and clauses into separate propositions;
- keep numbers, identifiers, dates, units and names exactly as written;
- never add a fact that the text does not state.
Input: a JSON object {"chunks": [{"id": "...", "text": "..."}, ...]}.
Answer with a JSON object {"results": [{"id": "<the chunk's id>", "propositions": ["...", ...]}, ...]}
holding one entry per input chunk, in the same order."""
PROMPT_VERSION = "1+" + hashlib.sha256(SYSTEM_PROMPT.encode()).hexdigest()[:8]
"""Changes with any edit of the prompt, so cached propositions of an older prompt are re-extracted."""


class _Invalid(Exception):
    """A 200 whose body cannot be used for the whole batch (retried a bounded number of times)."""


class _Refused(Exception):
    """The model refused (``message.refusal``): not retried, the batch's chunks are rejected."""


@dataclass
class _Counters:
    requests: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def __post_init__(self) -> None:
        self.lock = threading.Lock()

    def add(self, **kw: float) -> None:
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)


class OpenAIChatExtractor:
    """Propositions from an OpenAI chat model (or any compatible server at ``base_url``).

    The key comes from ``api_key`` or ``$OPENAI_API_KEY`` and is never kept, logged or
    shown; the URL from ``base_url`` or ``$OPENAI_BASE_URL``.
    """

    name = NAME
    version = VERSION
    prompt_version = PROMPT_VERSION

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_concurrency: int = 4,
        max_batch_chunks: int = 8,
        max_batch_tokens: int = 6000,
        max_output_tokens: int = 4096,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        prices: dict[str, Price] | None = None,
        seed: int | None = None,
    ) -> None:
        if max_concurrency < 1 or max_batch_chunks < 1 or max_batch_tokens < 1 or max_output_tokens < 1:
            raise ValueError("max_concurrency, max_batch_chunks, max_batch_tokens and max_output_tokens must be >= 1")
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key:
            raise MissingAPIKey(
                f"no OpenAI API key configured for proposition extraction with {model}: set OPENAI_API_KEY "
                "(or pass api_key=...), or use the offline extractor (extractor='offline'), which needs none"
            )
        url = base_url if base_url is not None else (os.environ.get("OPENAI_BASE_URL") or None)
        self.model = model
        self.price = price_for(model, prices or DEFAULT_PRICES)
        self.base_url = _safe_url(url) or "https://api.openai.com/v1"
        self.max_concurrency = max_concurrency
        self.max_batch_chunks = max_batch_chunks
        self.max_batch_tokens = max_batch_tokens
        self.max_output_tokens = max_output_tokens
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        self._system_tokens = count_tokens(SYSTEM_PROMPT) + MESSAGE_OVERHEAD_TOKENS
        self._client = openai.OpenAI(api_key=key, base_url=url, max_retries=0, timeout=timeout)

    def __repr__(self) -> str:
        return (
            f"OpenAIChatExtractor(model={self.model!r}, base_url={self.base_url!r}, "
            f"max_concurrency={self.max_concurrency}, max_batch_chunks={self.max_batch_chunks})"
        )

    def describe(self) -> dict[str, object]:
        """Configuration for run metadata (no secrets)."""
        return {
            "extractor": self.name, "model": self.model, "base_url": self.base_url,
            "max_concurrency": self.max_concurrency, "max_batch_chunks": self.max_batch_chunks,
            "max_batch_tokens": self.max_batch_tokens, "prompt_version": self.prompt_version,
            "price_usd_per_1m": [self.price.input_per_1m, self.price.output_per_1m],
        }

    def close(self) -> None:
        self._client.close()

    # -- extraction -----------------------------------------------------------------

    def extract(self, chunks: Sequence[ChunkInput], budget: Budget | None = None) -> ExtractResult:
        budget = budget or Budget([CostMeter("this call", None)])
        results: list[Extraction | None] = [None] * len(chunks)
        counters = _Counters()
        stop = threading.Event()
        batches = self._batches(chunks)

        def run(batch: list[int]) -> list[int]:
            items = [chunks[i] for i in batch]
            if stop.is_set():
                for i in batch:
                    results[i] = Extraction(chunks[i].chunk_id, deferred=True)
                return batch
            for i, ext in zip(batch, self._extract_batch(items, budget, counters, stop)):
                results[i] = ext
            return batch

        def align(batch: list[int]) -> None:
            for i in batch:
                ext = results[i]
                if ext is not None and ext.statements:
                    results[i] = _aligned(chunks[i], ext)

        if self.max_concurrency == 1 or len(batches) <= 1:
            for b in batches:
                align(run(b))
        else:
            # Workers only send and parse; this thread aligns each finished batch while the
            # others wait on the network, so alignment never delays the next request.
            with ThreadPoolExecutor(min(self.max_concurrency, len(batches)), thread_name_prefix="codex-props") as pool:
                for fut in as_completed([pool.submit(run, b) for b in batches]):
                    align(fut.result())  # configuration errors propagate
        stats = ExtractStats(
            requests=counters.requests, retries=counters.retries, input_tokens=counters.input_tokens,
            output_tokens=counters.output_tokens, cost_usd=round(counters.cost_usd, 6),
            stopped=f"cost cap reached ({budget.exhausted_message()})" if stop.is_set() else None,
        )
        return ExtractResult([r if r is not None else Extraction(c.chunk_id, deferred=True) for r, c in zip(results, chunks)], stats)

    def _batches(self, chunks: Sequence[ChunkInput]) -> list[list[int]]:
        """Consecutive chunks, at most ``max_batch_chunks`` and ``max_batch_tokens`` prompt tokens each."""
        out: list[list[int]] = []
        cur: list[int] = []
        tokens = 0
        for i, c in enumerate(chunks):
            n = count_tokens(c.text) + 16
            if cur and (len(cur) >= self.max_batch_chunks or tokens + n > self.max_batch_tokens):
                out.append(cur)
                cur, tokens = [], 0
            cur.append(i)
            tokens += n
        if cur:
            out.append(cur)
        return out

    def _extract_batch(
        self, items: list[ChunkInput], budget: Budget, counters: _Counters, stop: threading.Event
    ) -> list[Extraction]:
        ids = [str(k) for k in range(len(items))]  # short ids: the chunk URNs cost tokens and invite typos
        user = json.dumps({"chunks": [{"id": i, "text": c.text} for i, c in zip(ids, items)]}, ensure_ascii=False)
        prompt_tokens = self._system_tokens + count_tokens(user) + MESSAGE_OVERHEAD_TOKENS
        reserve = self.price.cost(prompt_tokens, self.max_output_tokens)
        if not budget.reserve(reserve):
            stop.set()
            return [Extraction(c.chunk_id, deferred=True) for c in items]
        spent = 0.0
        try:
            body = self._request(user, len(items), counters)
            raw_usage = body.get("usage")
            usage: dict[str, object] = raw_usage if isinstance(raw_usage, dict) else {}
            tin, tout = int(str(usage.get("prompt_tokens") or 0)), int(str(usage.get("completion_tokens") or 0))
            spent = self.price.cost(tin, tout)
            counters.add(input_tokens=tin, output_tokens=tout, cost_usd=spent)
            return self._results(body, items, ids)
        except _Refused as exc:
            return [Extraction(c.chunk_id, reject=f"model refused: {exc}") for c in items]
        except _BatchFailed as exc:
            return [Extraction(c.chunk_id, reject=str(exc)) for c in items]
        finally:
            budget.settle(reserve, spent)

    def _request(self, user: str, n: int, counters: _Counters) -> dict[str, object]:
        """One request, retried per the policy; the decoded body, or :class:`_Refused` / :class:`_BatchFailed`."""
        policy = self.retry
        attempts = transient = invalid = 0
        while True:
            attempts += 1
            counters.add(requests=1)
            retry_after: float | None = None
            try:
                raw = self._client.chat.completions.with_raw_response.create(
                    model=self.model,
                    messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}],
                    response_format={"type": "json_object"},
                    temperature=0,
                    max_completion_tokens=self.max_output_tokens,
                )
                return self._parse(raw.http_response.content)
            except _Invalid as exc:
                invalid += 1
                kind = f"invalid response: {exc}"
                if invalid > policy.max_invalid_responses:
                    raise _BatchFailed(
                        f"{kind} (after {attempts} attempts; at most {policy.max_invalid_responses} retries for "
                        "unusable responses)"
                    ) from exc
            except openai.APITimeoutError:
                kind = f"timeout (no answer within {self.timeout:g} s)"
            except openai.APIConnectionError as exc:
                kind = f"connection error ({type(exc.__cause__ or exc).__name__})"
            except openai.APIStatusError as exc:
                status = exc.status_code
                kind = "HTTP 429 rate limited" if status == 429 else f"HTTP {status}"
                if status in (401, 403, 404):
                    raise RuntimeError(
                        f"proposition extraction with {self.model} at {self.base_url}: HTTP {status}, not retryable "
                        f"(check OPENAI_API_KEY and the model name): {exc.message}"
                    ) from exc
                if status != 429 and not (status >= 500 or status in (408, 409)):
                    raise _BatchFailed(f"HTTP {status}, not retryable: {exc.message}") from exc
                retry_after = _retry_after_seconds(exc.response.headers)
            transient += 1
            counters.add(retries=1)
            if transient > policy.max_retries:
                raise _BatchFailed(f"{kind}; gave up after {attempts} attempts (a rerun tries again)")
            with self._rng_lock:
                delay = policy.backoff(transient - 1, self._rng)
                jitter = self._rng.uniform(0, 1)
            if retry_after is not None and retry_after > 0:
                if retry_after > policy.max_retry_after:
                    raise _BatchFailed(
                        f"{kind}: server asked to wait {retry_after:g} s, more than max_retry_after="
                        f"{policy.max_retry_after:g} s (a rerun tries again)"
                    )
                delay = retry_after + jitter * min(1.0, 0.1 * retry_after)
            log.warning("proposition batch of %d chunks: %s; retry %d/%d in %.2f s", n, kind, transient, policy.max_retries, delay)
            time.sleep(delay)

    @staticmethod
    def _parse(content: bytes) -> dict[str, object]:
        """The response body, checked down to the message (refusal, truncation, JSON content)."""
        try:
            body = json.loads(content)
        except ValueError as exc:
            raise _Invalid(f"malformed JSON body ({exc})") from exc
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _Invalid("response has no choices")
        choice = choices[0]
        raw_message = choice.get("message")
        message: dict[str, object] = raw_message if isinstance(raw_message, dict) else {}
        if message.get("refusal"):
            raise _Refused(str(message["refusal"])[:300])
        if choice.get("finish_reason") == "length":
            raise _Invalid("answer truncated at max_completion_tokens (finish_reason=length)")
        text = message.get("content")
        if not isinstance(text, str):
            raise _Invalid("message has no content")
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise _Invalid(f"message content is not JSON ({exc}): {text[:80]!r}") from exc
        if not isinstance(parsed, dict) or not isinstance(parsed.get("results"), list):
            raise _Invalid(f"message content has no 'results' list: {text[:80]!r}")
        body["_results"] = parsed["results"]
        return body

    def _results(self, body: dict[str, object], items: list[ChunkInput], ids: list[str]) -> list[Extraction]:
        by_id: dict[str, object] = {}
        entries = body["_results"]
        assert isinstance(entries, list)
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str | int):
                by_id.setdefault(str(entry["id"]), entry.get("propositions"))
        out = []
        for cid, chunk in zip(ids, items):
            props = by_id.get(cid)
            if cid not in by_id:
                out.append(Extraction(chunk.chunk_id, reject="model answer has no entry for this chunk"))
                continue
            if not isinstance(props, list) or not all(isinstance(p, str) for p in props):
                shown = json.dumps(props, ensure_ascii=False)[:120]
                out.append(Extraction(chunk.chunk_id, reject=f"model answer is not a list of strings: {shown}"))
                continue
            statements = [Statement(t, None, None) for t in (" ".join(p.split()) for p in props) if t]
            if not statements:
                out.append(Extraction(chunk.chunk_id, reject="model returned no propositions for this chunk"))
                continue
            out.append(Extraction(chunk.chunk_id, statements))
        return out


def _aligned(chunk: ChunkInput, ext: Extraction) -> Extraction:
    """The extraction with each statement aligned to the chunk's canonical text (null spans when not found)."""
    aligner = ChunkAligner(chunk.canonical, chunk.sources)
    out = []
    for st in ext.statements:
        spans, score = aligner.align(st.text)
        out.append(Statement(st.text, spans, score))
    return Extraction(ext.chunk_id, out)


class _BatchFailed(Exception):
    """The batch could not be extracted (retries exhausted, not retryable, unusable answers)."""
