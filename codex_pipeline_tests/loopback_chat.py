"""``POST /v1/chat/completions`` for the loopback OpenAI server: a deterministic proposition model.

The user message is the extractor's JSON (``{"chunks": [{"id", "text"}]}``); the
answer's content is ``{"results": [{"id", "propositions"}]}`` where a chunk's
propositions are its sentences (whitespace collapsed, cut after ``.``/``!``/``?``).
``usage`` counts the prompt and the answer in cl100k tokens. Chat faults (beside
the shared ones: ``rate_limit``, ``server_error``, ``delay``, ``malformed_json``,
``disconnect``, ``bad_request``): ``refusal``, ``bad_content`` (content is not
JSON), ``missing_entry`` (the last chunk has no entry), ``not_strings`` (the first
chunk's propositions are objects), ``truncated`` (``finish_reason = "length"``),
``invented`` (each chunk gets one extra statement found nowhere in its text).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from codex_pipeline.core.tokens import count_tokens

if TYPE_CHECKING:
    from codex_pipeline_tests.loopback_openai import LoopbackOpenAI, _Handler

SENTENCE_CUT = re.compile(r"(?<=[.!?])\s+")
INVENTED = "The moon is made of green cheese."
REFUSAL = "I'm sorry, but I can't help with that request."


def propositions_for(text: str) -> list[str]:
    """What the loopback model answers for one chunk's text."""
    return [s for s in SENTENCE_CUT.split(" ".join(text.split())) if s]


def serve_chat(handler: _Handler, srv: LoopbackOpenAI, raw: bytes) -> None:
    from codex_pipeline_tests.loopback_openai import RecordedRequest

    try:
        body = json.loads(raw)
        messages = body["messages"]
        user = next(m["content"] for m in reversed(messages) if m.get("role") == "user")
        chunks = json.loads(user)["chunks"]
    except (ValueError, KeyError, TypeError, StopIteration):
        handler._error(400, "expected messages with a user message holding {'chunks': [...]}", "invalid_request_error")
        return
    authorized = srv.api_key is None or handler.headers.get("Authorization") == f"Bearer {srv.api_key}"
    tokens = sum(count_tokens(str(m.get("content") or "")) + 4 for m in messages)
    fault = srv._next_fault()
    kind = fault.kind if fault else None
    rec = RecordedRequest(handler._t0, body.get("model"), None, None, [user], tokens, kind, authorized)
    srv._record(rec)
    if not authorized:
        rec.status = 401
        handler._error(401, "Incorrect API key provided.", "invalid_request_error")
        return
    if handler.http_fault(srv, rec, fault):
        return
    if kind == "malformed_json":
        handler._send(200, b'{"id": "chatcmpl-loopback", "object": "chat.completion", "choices": [{"ind')
        return

    results: list[dict[str, Any]] = [
        {"id": c["id"], "propositions": propositions_for(c["text"]) + ([INVENTED] if kind == "invented" else [])}
        for c in chunks
    ]
    if kind == "missing_entry":
        results = results[:-1]
    elif kind == "not_strings" and results:
        results[0]["propositions"] = [{"statement": p} for p in results[0]["propositions"]]
    content: str | None = json.dumps({"results": results}, ensure_ascii=False)
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    finish = "stop"
    if kind == "refusal":
        message = {"role": "assistant", "content": None, "refusal": REFUSAL}
    elif kind == "bad_content":
        message["content"] = "Sure! Here are the propositions: [" + (content or "")[:40]
    elif kind == "truncated":
        message["content"] = (content or "")[: max(1, len(content or "") // 2)]
        finish = "length"
    completion = count_tokens(message["content"] or message.get("refusal") or "")
    payload = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": tokens, "completion_tokens": completion, "total_tokens": tokens + completion},
    }
    handler._send(200, json.dumps(payload).encode())
