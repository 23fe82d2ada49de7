"""The OpenAI chat extractor through the real `openai` client against the loopback chat server."""

from __future__ import annotations

import pytest

from codex_pipeline.propositions.base import ChunkInput
from codex_pipeline.propositions.cost import Budget, CostMeter, Price
from codex_pipeline.propositions.openai_chat import PROMPT_VERSION
from codex_pipeline.transport import OpenAIConnection, RetrySettings
from codex_pipeline_tests.loopback_chat import INVENTED, REFUSAL, propositions_for
from codex_pipeline_tests.loopback_openai import LoopbackOpenAI

TEXTS = [
    "The permit was issued on 24 November. It expires in 2027.",
    "Three roofers worked without fall protection. The employer was cited.",
    "The vessel went dark for 6 hours. Radar tracked it throughout.",
    "Keys are free. A key can be revoked at any time.",
]


def chunks(texts: list[str] = TEXTS) -> list[ChunkInput]:
    canonical = "\n\n".join(texts)
    out, pos = [], 0
    for i, t in enumerate(texts):
        out.append(ChunkInput(f"urn:aprs:chunk:{i:016x}", "urn:aprs:docs:x", t, f"h{i}", ((pos, pos + len(t)),), canonical))
        pos += len(t) + 2
    return out


def test_statements_are_aligned_to_the_canonical_text(make_chat, chat_server: LoopbackOpenAI) -> None:
    inputs = chunks()
    res = make_chat(max_batch_chunks=2).extract(inputs)
    assert res.stats.requests == chat_server.request_count == 2 and res.stats.retries == 0
    assert res.stats.input_tokens > 0 and res.stats.output_tokens > 0 and res.stats.cost_usd > 0
    for c, ext in zip(inputs, res.extractions):
        assert [s.text for s in ext.statements] == propositions_for(c.text)
        for s in ext.statements:  # each loopback statement is a sentence of the chunk: found exactly
            assert s.score == 1.0 and s.spans is not None
            assert " ".join(c.canonical[a:b] for a, b in s.spans) == s.text
    req = chat_server.requests[0]
    assert req.model == "gpt-4o-mini" and req.authorized
    assert PROMPT_VERSION.startswith("1+")


def test_a_statement_found_nowhere_has_null_spans(make_chat, chat_server: LoopbackOpenAI) -> None:
    chat_server.push("invented")
    (ext,) = make_chat().extract(chunks(TEXTS[:1])).extractions
    invented = [s for s in ext.statements if s.text == INVENTED]
    assert invented and invented[0].spans is None and invented[0].score is not None and invented[0].score < 0.6
    assert all(s.spans is not None for s in ext.statements if s.text != INVENTED)


def test_429_retry_after_5xx_timeouts_and_disconnects_are_retried(make_chat, chat_server: LoopbackOpenAI) -> None:
    chat_server.push("rate_limit", retry_after=0.05)
    chat_server.push("server_error", status=503)
    chat_server.push("delay", delay=1.5)
    chat_server.push("disconnect")
    res = make_chat(timeout=0.5, max_concurrency=1).extract(chunks(TEXTS[:2]))
    assert [len(e.statements) for e in res.extractions] == [2, 2]
    assert res.stats.retries == 4 and res.stats.requests == 5
    assert [r.fault for r in chat_server.requests] == ["rate_limit", "server_error", "delay", "disconnect", None]


def test_bad_model_output_is_rejected_per_chunk(make_chat, chat_server: LoopbackOpenAI) -> None:
    ex = make_chat(max_batch_chunks=2, max_concurrency=1)
    chat_server.push("refusal")  # batch 1: both chunks refused
    chat_server.push("not_strings")  # batch 2: first chunk's entry unusable, second fine
    res = ex.extract(chunks())
    reasons = [e.reject for e in res.extractions]
    assert reasons[0] == reasons[1] == f"model refused: {REFUSAL}"
    assert reasons[2] is not None and reasons[2].startswith("model answer is not a list of strings")
    assert reasons[3] is None and res.extractions[3].statements

    chat_server.reset()
    chat_server.push("missing_entry")
    res = ex.extract(chunks(TEXTS[:2]))
    assert res.extractions[0].reject is None and res.extractions[1].reject == "model answer has no entry for this chunk"


@pytest.mark.parametrize("fault", ["bad_content", "malformed_json", "truncated"])
def test_unusable_answers_are_retried_then_rejected(make_chat, chat_server: LoopbackOpenAI, fault: str) -> None:
    chat_server.fail_always(fault)
    res = make_chat().extract(chunks(TEXTS[:1]))
    (ext,) = res.extractions
    assert ext.reject is not None and "invalid response" in ext.reject and "after 3 attempts" in ext.reject
    assert chat_server.request_count == 3  # 1 + max_invalid_responses (2)


def test_exhausted_retries_reject_and_do_not_raise(make_chat, chat_server: LoopbackOpenAI) -> None:
    chat_server.fail_always("server_error", status=500)
    res = make_chat(retry=RetrySettings(max_retries=2, backoff_base=0.01, max_delay=0.02)).extract(chunks(TEXTS[:1]))
    assert "HTTP 500; gave up after 3 attempts (a rerun tries again)" in (res.extractions[0].reject or "")
    assert res.stats.requests == 3 and res.stats.retries == 2


def test_a_wrong_key_fails_loudly(chat_server: LoopbackOpenAI) -> None:
    from codex_pipeline.propositions.openai_chat import OpenAIChatExtractor

    ex = OpenAIChatExtractor(connection=OpenAIConnection("sk-wrong", chat_server.base_url, timeout=5.0))
    with pytest.raises(RuntimeError, match=r"HTTP 401, not retryable \(check OPENAI_API_KEY\)") as info:
        ex.extract(chunks(TEXTS[:1]))
    assert "sk-wrong" not in str(info.value)
    assert chat_server.request_count == 1


def test_cost_cap_stops_before_the_request_that_would_pass_it(make_chat, chat_server: LoopbackOpenAI) -> None:
    price = Price(input_per_1m=1_000_000.0, output_per_1m=0.0)  # $1 per prompt token: easy sums
    ex = make_chat(max_batch_chunks=1, max_concurrency=1, prices={"gpt-4o-mini": price})
    inputs = chunks()
    first = ex.extract(inputs[:1])  # what one request costs, as billed
    per_request = first.stats.cost_usd
    chat_server.reset()
    partition = CostMeter("partition", per_request * 2.5)
    res = ex.extract(inputs, Budget([CostMeter("run", None), partition]))
    assert chat_server.request_count == 2  # the third would pass the cap: never sent
    assert [e.deferred for e in res.extractions] == [False, False, True, True]
    assert res.stats.stopped is not None and res.stats.stopped.startswith("cost cap reached (partition:")
    assert partition.spent_usd <= partition.cap_usd


def test_no_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from codex_pipeline.defs.resources import PropositionSettings
    from codex_pipeline.embeddings.base import MissingAPIKey
    from codex_pipeline.propositions.openai_chat import OpenAIChatExtractor

    with pytest.raises(MissingAPIKey, match="set OPENAI_API_KEY.*offline extractor"):
        OpenAIChatExtractor()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the resource reads it at the edge
    with pytest.raises(MissingAPIKey, match="OPENAI_API_KEY"):
        PropositionSettings(kind="openai").build()
