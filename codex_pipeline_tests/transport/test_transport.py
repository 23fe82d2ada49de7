"""The shared OpenAI transport through the real ``openai`` client against the loopback server:
429 with Retry-After, 5xx, timeouts, dropped connections, a wrong key, unusable answers, redaction."""

from __future__ import annotations

import email.utils
import json
import logging
import time
from collections.abc import Iterator

import openai
import pytest

from codex_pipeline.transport import OpenAIConnection, RequestFailed, RetrySettings, UnusableResponse, redact
from codex_pipeline.transport.client import OpenAITransport
from codex_pipeline.transport.retry import Tally, retry_after_seconds
from codex_pipeline_tests.loopback_chat import propositions_for
from codex_pipeline_tests.loopback_openai import LoopbackOpenAI

KEY = "sk-codex-transport-Secr3tKey-9xQ"
FAST = RetrySettings(max_retries=3, backoff_base=0.01, max_delay=0.02)


@pytest.fixture
def server() -> Iterator[LoopbackOpenAI]:
    with LoopbackOpenAI(api_key=KEY) as srv:
        yield srv


def transport(server: LoopbackOpenAI, key: str = KEY, timeout: float = 5.0, retry: RetrySettings = FAST) -> OpenAITransport:
    return OpenAITransport(OpenAIConnection(key, server.base_url, timeout=timeout, retry=retry), seed=0)


def embed(client: openai.OpenAI) -> int:
    """One small embeddings request; the number of vectors answered."""
    return len(client.embeddings.create(input=["a council vote"], model="text-embedding-3-small", dimensions=8).data)


def send(t: OpenAITransport, request=embed) -> tuple[object, Tally]:
    tally = Tally()
    try:
        return t.send(request, label="test request", tally=tally), tally
    finally:
        t.close()


def test_a_request_that_succeeds_is_sent_once(server: LoopbackOpenAI) -> None:
    out, tally = send(transport(server))
    assert out == 1 and (tally.requests, tally.retries) == (1, 0)
    assert server.requests[0].authorized


def test_429_waits_at_least_retry_after_and_counts_the_retry(server: LoopbackOpenAI) -> None:
    server.push("rate_limit", retry_after=1)
    out, tally = send(transport(server))
    first, second = server.requests
    assert out == 1 and (tally.requests, tally.retries) == (2, 1)
    assert second.received_at - first.received_at >= 1.0


def test_retry_after_beyond_the_maximum_fails_at_once(server: LoopbackOpenAI) -> None:
    server.push("rate_limit", retry_after=600)
    with pytest.raises(RequestFailed) as info:
        send(transport(server))
    assert str(info.value) == "HTTP 429 rate limited: server asked to wait 600 s, more than max_retry_after=120 s"
    assert info.value.attempts == 1 and info.value.transient and server.request_count == 1


def test_5xx_are_retried_until_the_policy_gives_up(server: LoopbackOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="codex_pipeline")
    server.fail_always("server_error", status=502)
    with pytest.raises(RequestFailed) as info:
        send(transport(server))
    assert str(info.value) == "HTTP 502; gave up after 4 attempts"
    assert (info.value.kind, info.value.attempts, info.value.transient) == ("HTTP 502", 4, True)
    assert server.request_count == 4
    assert [r.getMessage().split(" in ")[0] for r in caplog.records] == [
        f"test request: HTTP 502; retry {n}/3" for n in (1, 2, 3)
    ]


def test_a_5xx_then_success_is_one_retry(server: LoopbackOpenAI) -> None:
    server.push("server_error", status=503)
    out, tally = send(transport(server))
    assert out == 1 and (tally.requests, tally.retries) == (2, 1)


def test_timeouts_and_dropped_connections_are_retried(server: LoopbackOpenAI) -> None:
    server.push("delay", delay=1.0)
    server.push("disconnect")
    out, tally = send(transport(server, timeout=0.3))
    assert out == 1 and (tally.requests, tally.retries) == (3, 2)


def test_a_timeout_that_persists_says_so(server: LoopbackOpenAI) -> None:
    server.fail_always("delay", delay=1.0)
    with pytest.raises(RequestFailed, match=r"^timeout \(no answer within 0.2 s\); gave up after 2 attempts$"):
        send(transport(server, timeout=0.2, retry=RetrySettings(max_retries=1, backoff_base=0.01)))


def test_a_wrong_key_is_not_retried_and_not_shown(server: LoopbackOpenAI) -> None:
    wrong = "sk-wrong-key-Pq77abc"
    with pytest.raises(RequestFailed) as info:
        send(transport(server, key=wrong))
    assert str(info.value).startswith("HTTP 401, not retryable (check OPENAI_API_KEY): ")
    assert info.value.status == 401 and not info.value.transient and info.value.attempts == 1
    assert wrong not in str(info.value) and server.request_count == 1


def test_a_bad_request_is_not_retried(server: LoopbackOpenAI) -> None:
    server.push("bad_request")
    with pytest.raises(RequestFailed, match=r"^HTTP 400, not retryable: "):
        send(transport(server))
    assert server.request_count == 1


def test_unusable_answers_are_retried_a_bounded_number_of_times(server: LoopbackOpenAI) -> None:
    def unusable(client: openai.OpenAI) -> int:
        embed(client)
        raise UnusableResponse("malformed JSON (truncated)")

    with pytest.raises(RequestFailed) as info:
        send(transport(server, retry=RetrySettings(max_retries=10, max_invalid_responses=2, backoff_base=0.01)), unusable)
    assert str(info.value) == ("invalid response: malformed JSON (truncated) (after 3 attempts; at most 2 retries "
                               "for unusable responses)")
    assert info.value.kind == "malformed JSON" and server.request_count == 3


def test_errors_that_are_not_the_transports_pass_through_unretried(server: LoopbackOpenAI) -> None:
    def broken(client: openai.OpenAI) -> int:
        embed(client)
        raise KeyError("a bug in the caller's parser")

    with pytest.raises(KeyError):
        send(transport(server), broken)
    assert server.request_count == 1


def test_chat_completions_go_through_the_same_policy(server: LoopbackOpenAI) -> None:
    server.push("rate_limit", retry_after=0.05)
    text = "The permit was issued. It expires in 2027."

    def chat(client: openai.OpenAI) -> str:
        user = json.dumps({"chunks": [{"id": "0", "text": text}]})
        answer = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": user}])
        return answer.choices[0].message.content or ""

    out, tally = send(transport(server), chat)
    assert all(p in str(out) for p in propositions_for(text))
    assert (tally.requests, tally.retries) == (2, 1)


def test_the_key_is_redacted_from_every_log_line_and_error(server: LoopbackOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("openai", "httpx", "httpcore", "codex_pipeline"):
        caplog.set_level(logging.DEBUG, logger=name)

    def echoes_the_key(client: openai.OpenAI) -> int:  # a server that quotes the key back
        embed(client)
        raise UnusableResponse(f"body says: Incorrect API key provided: {KEY}")

    t = transport(server, retry=RetrySettings(max_retries=3, max_invalid_responses=1, backoff_base=0.01))
    with pytest.raises(RequestFailed) as info:
        send(t, echoes_the_key)
    shown = [str(info.value), caplog.text, repr(t), repr(t.connection), str(t.connection.describe())]
    shown += [r.getMessage() for r in caplog.records]
    assert any("retry 1/3" in s for s in shown)
    for s in shown:
        assert KEY not in s and KEY[8:20] not in s
    assert "[redacted]" in str(info.value)


def test_redact_scrubs_the_key_and_anything_shaped_like_one() -> None:
    assert redact(f"key {KEY} here", KEY) == "key [redacted] here"
    assert redact("Incorrect API key provided: sk-proj-abc1****wxyz.") == "Incorrect API key provided: sk-[redacted]"
    assert redact("no key here", "") == "no key here"


def test_the_connection_shows_no_key_and_no_url_credentials() -> None:
    c = OpenAIConnection(KEY, "http://user:hunter2@127.0.0.1:9/v1?token=abc", organization="org-1")
    for shown in (repr(c), str(c.describe())):
        assert KEY not in shown and "hunter2" not in shown and "token" not in shown
    assert c.shown_url == "http://127.0.0.1:9/v1"
    assert OpenAIConnection(KEY).shown_url == "https://api.openai.com/v1"
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAIConnection(KEY, max_concurrency=0)
    with pytest.raises(ValueError, match="timeout"):
        OpenAIConnection(KEY, timeout=0)


def test_retry_after_headers_in_seconds_milliseconds_or_a_date() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    got = retry_after_seconds({"retry-after": soon})
    assert got is not None and 25 <= got <= 31
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None
