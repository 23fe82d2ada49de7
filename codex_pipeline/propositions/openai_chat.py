"""The OpenAI chat extractor: the seed's recipe (``gpt-4o-mini``, JSON response format).

Chunks are sent in batches (at most ``max_batch_chunks`` chunks and
``max_batch_tokens`` prompt tokens per request) as a JSON object; the model answers
``{"results": [{"id", "propositions": [...]}, ...]}`` with pronouns resolved. Up to
``connection.max_concurrency`` requests are in flight. Requests go through the
shared transport (:mod:`codex_pipeline.transport`), as the embedder's do: 429 /
5xx / timeouts retried with backoff and jitter, ``Retry-After`` honoured, every
retry counted, the key never shown.

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
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

import openai

from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.embeddings.base import MissingAPIKey
from codex_pipeline.propositions.align import ChunkAligner
from codex_pipeline.propositions.base import ChunkInput, Extraction, ExtractResult, ExtractStats, Statement
from codex_pipeline.propositions.cost import DEFAULT_PRICES, Budget, CostMeter, Price, price_for
from codex_pipeline.transport import OpenAIConnection, RequestFailed, UnusableResponse
from codex_pipeline.transport.client import OpenAITransport
from codex_pipeline.transport.retry import Tally

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


class _Invalid(UnusableResponse):
    """A 200 whose body cannot be used for the whole batch (the transport retries it a bounded number of times)."""


class _Refused(Exception):
    """The model refused (``message.refusal``): not retried, the batch's chunks are rejected."""


class OpenAIChatExtractor:
    """Propositions from an OpenAI chat model (or any compatible server: ``connection.base_url``).

    The key and URL come in ``connection``, built by the caller (the Dagster resource
    reads ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``); the key is never logged or shown.
    """

    name = NAME
    version = VERSION
    prompt_version = PROMPT_VERSION

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        connection: OpenAIConnection | None = None,
        max_batch_chunks: int = 8,
        max_batch_tokens: int = 6000,
        max_output_tokens: int = 4096,
        prices: dict[str, Price] | None = None,
        seed: int | None = None,
    ) -> None:
        if max_batch_chunks < 1 or max_batch_tokens < 1 or max_output_tokens < 1:
            raise ValueError("max_batch_chunks, max_batch_tokens and max_output_tokens must be >= 1")
        if connection is None or not connection.api_key:
            raise MissingAPIKey(
                f"no OpenAI API key configured for proposition extraction with {model}: set OPENAI_API_KEY "
                "(or pass connection=OpenAIConnection(api_key=...)), or use the offline extractor "
                "(extractor='offline'), which needs none"
            )
        self.model = model
        self.price = price_for(model, prices or DEFAULT_PRICES)
        self.base_url = connection.shown_url
        self.max_concurrency = connection.max_concurrency
        self.max_batch_chunks = max_batch_chunks
        self.max_batch_tokens = max_batch_tokens
        self.max_output_tokens = max_output_tokens
        self._system_tokens = count_tokens(SYSTEM_PROMPT) + MESSAGE_OVERHEAD_TOKENS
        self._transport = OpenAITransport(connection, seed=seed)

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
        """Close the HTTP client; the extractor cannot send requests afterwards."""
        self._transport.close()

    # -- extraction -----------------------------------------------------------------

    def extract(self, chunks: Sequence[ChunkInput], budget: Budget | None = None) -> ExtractResult:
        """See :meth:`~.base.Extractor.extract`; without ``budget``, spending is counted but not capped."""
        budget = budget or Budget([CostMeter("this call", None)])
        results: list[Extraction | None] = [None] * len(chunks)
        tally = Tally()
        stop = threading.Event()
        batches = self._batches(chunks)

        def run(batch: list[int]) -> list[int]:
            items = [chunks[i] for i in batch]
            if stop.is_set():
                for i in batch:
                    results[i] = Extraction(chunks[i].chunk_id, deferred=True)
                return batch
            for i, ext in zip(batch, self._extract_batch(items, budget, tally, stop)):
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
            requests=tally.requests, retries=tally.retries, input_tokens=tally.input_tokens,
            output_tokens=tally.output_tokens, cost_usd=round(tally.cost_usd, 6),
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
        self, items: list[ChunkInput], budget: Budget, tally: Tally, stop: threading.Event
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
            body = self._request(user, len(items), tally)
            raw_usage = body.get("usage")
            usage: dict[str, object] = raw_usage if isinstance(raw_usage, dict) else {}
            tin, tout = int(str(usage.get("prompt_tokens") or 0)), int(str(usage.get("completion_tokens") or 0))
            spent = self.price.cost(tin, tout)
            tally.add(input_tokens=tin, output_tokens=tout, cost_usd=spent)
            return self._results(body, items, ids)
        except _Refused as exc:
            return [Extraction(c.chunk_id, reject=f"model refused: {exc}") for c in items]
        except RequestFailed as exc:
            if exc.status in (401, 403, 404):  # configuration, not this batch: the run must fail
                raise RuntimeError(f"proposition extraction with {self.model} at {self.base_url}: {exc}") from None
            why = f"{exc} (a rerun tries again)" if exc.transient else str(exc)
            return [Extraction(c.chunk_id, reject=why) for c in items]
        finally:
            budget.settle(reserve, spent)

    def _request(self, user: str, n: int, tally: Tally) -> dict[str, object]:
        """One request through the transport; the decoded body, or :class:`_Refused` / :class:`RequestFailed`."""

        def request(client: openai.OpenAI) -> dict[str, object]:
            raw = client.chat.completions.with_raw_response.create(
                model=self.model,
                messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}],
                response_format={"type": "json_object"},
                temperature=0,
                max_completion_tokens=self.max_output_tokens,
            )
            return self._parse(raw.http_response.content)

        return self._transport.send(request, label=f"proposition batch of {n} chunks", tally=tally)

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
