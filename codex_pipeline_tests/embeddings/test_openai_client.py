"""The OpenAI embedder, through the real ``openai`` client, against the loopback server."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.embeddings import EmbeddingFailed, EmptyInput, InputTooLong, MissingAPIKey, make_embedder
from codex_pipeline.embeddings.openai_client import (
    API_MAX_INPUT_TOKENS,
    API_MAX_INPUTS,
    API_MAX_REQUEST_TOKENS,
    OpenAIEmbedder,
    plan_batches,
)
from codex_pipeline.transport import OpenAIConnection, RetrySettings
from codex_pipeline_tests.embeddings.conftest import SECRET_KEY
from codex_pipeline_tests.loopback_openai import LoopbackOpenAI, vector_for


def expected(texts: list[str], d: int = 1536) -> np.ndarray:
    return np.stack([vector_for(t, d) for t in texts])


def texts_of(n: int, prefix: str = "chunk") -> list[str]:
    return [f"{prefix} number {i}: the council approved item {i % 7}." for i in range(n)]


# -- happy path -----------------------------------------------------------------------
def test_vectors_model_and_dimensions(server: LoopbackOpenAI, make_openai) -> None:
    e = make_openai()
    texts = texts_of(10)
    res = e.embed(texts)
    assert res.vectors.dtype == np.float32 and res.vectors.shape == (10, 1536)
    np.testing.assert_array_equal(res.vectors, expected(texts))
    assert res.requests == 1 and res.retries == 0
    assert res.tokens == sum(count_tokens(t) for t in texts)
    (req,) = server.requests
    assert (req.model, req.dimensions, req.authorized) == ("text-embedding-3-large", 1536, True)
    assert req.inputs == texts
    assert e.model == "text-embedding-3-large" and e.dimensions == 1536
    assert "dims=1536" in e.version and "text-embedding-3-large" in e.version


def test_empty_list_makes_no_request(server: LoopbackOpenAI, make_openai) -> None:
    res = make_openai().embed([])
    assert res.vectors.shape == (0, 1536) and res.requests == 0
    assert server.request_count == 0


def test_out_of_order_items_are_placed_by_index(server: LoopbackOpenAI, make_openai) -> None:
    server.push("shuffled")
    texts = texts_of(5)
    res = make_openai().embed(texts)
    np.testing.assert_array_equal(res.vectors, expected(texts))
    assert res.requests == 1


# -- batching limits ---------------------------------------------------------------
def test_batches_hold_at_most_2048_inputs(server: LoopbackOpenAI, make_openai) -> None:
    texts = texts_of(2100)
    res = make_openai(max_concurrency=2).embed(texts)
    sizes = sorted(r.n_inputs for r in server.requests)
    assert sizes == [52, 2048]
    assert all(r.status == 200 for r in server.requests)
    assert sorted(server.served_inputs()) == sorted(texts)  # each input sent exactly once
    assert res.requests == 2
    np.testing.assert_array_equal(res.vectors, expected(texts))


def test_batches_hold_at_most_300k_tokens(server: LoopbackOpenAI, make_openai) -> None:
    body = " hello" * 7900
    texts = [f"doc {i}:{body}" for i in range(40)]
    counts = [count_tokens(t) for t in texts]
    assert all(c <= API_MAX_INPUT_TOKENS for c in counts) and sum(counts) > API_MAX_REQUEST_TOKENS
    res = make_openai().embed(texts)
    assert server.request_count == 2 == res.requests
    for r in server.requests:
        assert r.status == 200 and r.tokens <= API_MAX_REQUEST_TOKENS
    first, second = sorted(server.requests, key=lambda r: texts.index(r.inputs[0]))
    assert first.inputs + second.inputs == texts
    assert first.tokens + count_tokens(second.inputs[0]) > API_MAX_REQUEST_TOKENS  # the first batch was full
    np.testing.assert_array_equal(res.vectors, expected(texts))


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.integers(1, API_MAX_INPUT_TOKENS), max_size=300),
    max_inputs=st.integers(1, 50),
    max_tokens=st.integers(API_MAX_INPUT_TOKENS, 60_000),
)
def test_plan_batches_properties(counts: list[int], max_inputs: int, max_tokens: int) -> None:
    batches = plan_batches(counts, max_inputs, max_tokens)
    pos = 0
    for k, (s, e) in enumerate(batches):
        assert s == pos and e > s  # contiguous, in order, never empty
        assert e - s <= max_inputs and sum(counts[s:e]) <= max_tokens
        if k + 1 < len(batches):  # greedy: the next input would not have fitted
            assert e - s == max_inputs or sum(counts[s : e + 1]) > max_tokens
        pos = e
    assert pos == len(counts)


def test_input_over_8191_tokens_is_refused_before_any_request(server: LoopbackOpenAI, make_openai) -> None:
    texts = ["short", " word" * (API_MAX_INPUT_TOKENS + 5), "also short"]
    with pytest.raises(InputTooLong, match=r"input 1 has 8,196 tokens.*at most 8,191") as info:
        make_openai().embed(texts)
    assert info.value.index == 1
    assert server.request_count == 0


def test_empty_string_is_refused_before_any_request(server: LoopbackOpenAI, make_openai) -> None:
    with pytest.raises(EmptyInput, match="input 2 is an empty string"):
        make_openai().embed(["a", "b", ""])
    assert server.request_count == 0


def test_limits_are_validated() -> None:
    key = OpenAIConnection(api_key="k")
    with pytest.raises(ValueError, match="max_batch_inputs"):
        make_embedder("openai", connection=key, max_batch_inputs=API_MAX_INPUTS + 1)
    with pytest.raises(ValueError, match="max_batch_tokens"):
        make_embedder("openai", connection=key, max_batch_tokens=API_MAX_REQUEST_TOKENS + 1)
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAIConnection(api_key="k", max_concurrency=0)


# -- faults: one failure, then success ------------------------------------------------
@pytest.mark.parametrize(
    "fault",
    [
        {"fault": "rate_limit"},
        {"fault": "server_error", "status": 500},
        {"fault": "server_error", "status": 503},
        {"fault": "delay", "delay": 2.0},
        {"fault": "disconnect"},
        {"fault": "malformed_json"},
        {"fault": "wrong_dimensions"},
        {"fault": "wrong_count"},
        {"fault": "duplicate_index"},
    ],
    ids=lambda f: "-".join(str(v) for v in f.values()),
)
def test_a_transient_fault_is_retried(server: LoopbackOpenAI, make_openai, fault: dict) -> None:
    server.push(**fault)
    texts = texts_of(7)
    res = make_openai(timeout=0.5).embed(texts)
    np.testing.assert_array_equal(res.vectors, expected(texts))
    assert res.requests == 2 == server.request_count
    assert res.retries == 1
    assert server.requests[0].fault == fault["fault"] and server.requests[1].fault is None


def test_retry_after_is_honoured(server: LoopbackOpenAI, make_openai) -> None:
    server.push("rate_limit", retry_after=1)
    texts = texts_of(3)
    res = make_openai().embed(texts)
    first, second = server.requests
    assert second.received_at - first.received_at >= 1.0  # waited at least Retry-After
    assert res.requests == 2 and res.retries == 1
    np.testing.assert_array_equal(res.vectors, expected(texts))


def test_retry_after_beyond_the_maximum_fails_at_once(server: LoopbackOpenAI, make_openai) -> None:
    server.push("rate_limit", retry_after=3600)
    with pytest.raises(EmbeddingFailed, match=r"server asked to wait 3600 s, more than max_retry_after=120"):
        make_openai().embed(texts_of(2))
    assert server.request_count == 1


# -- faults: retries exhausted ------------------------------------------------------------
def test_retries_exhausted_raise_a_clear_error(server: LoopbackOpenAI, make_openai) -> None:
    server.fail_always("server_error", status=502)
    e = make_openai(retry=RetrySettings(max_retries=2, backoff_base=0.01, max_delay=0.02))
    with pytest.raises(EmbeddingFailed) as info:
        e.embed(texts_of(4))
    msg = str(info.value)
    assert "HTTP 502" in msg and "gave up after 3 attempts" in msg and "inputs 0..3" in msg
    assert info.value.attempts == 3 and info.value.completed == 0 and info.value.failed_inputs == 4
    assert server.request_count == 3


@pytest.mark.parametrize(
    ("fault", "words"),
    [("wrong_dimensions", "has 1535 dimensions, expected 1536"), ("malformed_json", "malformed JSON"),
     ("wrong_count", "expected 4 embeddings, got 3")],
)
def test_unusable_responses_are_retried_a_bounded_number_of_times(
    server: LoopbackOpenAI, make_openai, fault: str, words: str
) -> None:
    server.fail_always(fault)
    e = make_openai(retry=RetrySettings(max_retries=10, max_invalid_responses=2, backoff_base=0.01, max_delay=0.02))
    with pytest.raises(EmbeddingFailed, match=words) as info:
        e.embed(texts_of(4))
    assert "at most 2 retries for unusable responses" in str(info.value)
    assert server.request_count == 3 == info.value.attempts


def test_a_timeout_that_persists_fails(server: LoopbackOpenAI, make_openai) -> None:
    server.fail_always("delay", delay=1.0)
    e = make_openai(timeout=0.2, retry=RetrySettings(max_retries=1, backoff_base=0.01, max_delay=0.02))
    with pytest.raises(EmbeddingFailed, match=r"timeout \(no answer within 0.2 s\); gave up after 2 attempts"):
        e.embed(texts_of(2))


def test_bad_request_is_not_retried(server: LoopbackOpenAI, make_openai) -> None:
    server.push("bad_request")
    with pytest.raises(EmbeddingFailed, match="HTTP 400, not retryable"):
        make_openai().embed(texts_of(2))
    assert server.request_count == 1


def test_wrong_key_is_not_retried_and_not_shown(server: LoopbackOpenAI, make_openai) -> None:
    wrong = "sk-wrong-key-Pq77"
    with pytest.raises(EmbeddingFailed, match=r"HTTP 401, not retryable \(check OPENAI_API_KEY\)") as info:
        make_openai(api_key=wrong).embed(texts_of(2))
    assert wrong not in str(info.value)
    assert server.request_count == 1 and not server.requests[0].authorized


def test_finished_batches_are_handed_over_before_the_failure(server: LoopbackOpenAI, make_openai) -> None:
    texts = texts_of(60)
    server.push(None, times=3)  # the first three requests succeed …
    server.fail_always("server_error")  # … then the server breaks
    got: dict[int, np.ndarray] = {}

    def on_batch(idx: np.ndarray, vecs: np.ndarray) -> None:
        for i, v in zip(idx, vecs):
            assert int(i) not in got  # never handed over twice
            got[int(i)] = v

    e = make_openai(max_batch_inputs=10, max_concurrency=1, retry=RetrySettings(max_retries=1, backoff_base=0.01))
    with pytest.raises(EmbeddingFailed) as info:
        e.embed(texts, on_batch=on_batch)
    assert sorted(got) == list(range(30))
    assert info.value.completed == 30 and info.value.failed_inputs == 30
    assert "30 of 60 inputs were embedded" in str(info.value)
    for i, v in got.items():
        np.testing.assert_array_equal(v, vector_for(texts[i], 1536))
    assert server.request_count == 3 + 2  # three good batches, then one batch tried twice


def test_concurrency_is_bounded(make_openai) -> None:
    with LoopbackOpenAI(latency=0.05, api_key=SECRET_KEY) as slow:
        e = OpenAIEmbedder(connection=OpenAIConnection(SECRET_KEY, slow.base_url, max_concurrency=3), max_batch_inputs=5)
        texts = texts_of(60)
        res = e.embed(texts)
        e.close()
        assert slow.request_count == 12 == res.requests
        assert 1 <= slow.max_in_flight <= 3
        np.testing.assert_array_equal(res.vectors, expected(texts))


# -- configuration and secrets ----------------------------------------------------------
def test_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)  # the library never looks there
    with pytest.raises(MissingAPIKey, match="set the OPENAI_API_KEY environment variable.*kind='local'"):
        make_embedder("openai")
    with pytest.raises(MissingAPIKey, match="OPENAI_API_KEY"):
        make_embedder("openai", connection=OpenAIConnection(api_key=""))


def test_key_and_url_from_the_environment(server: LoopbackOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    """The resource reads them (the edge), the embedder gets them in its connection."""
    from codex_pipeline.defs.resources import EmbeddingSettings, OpenAIConnectionSettings
    from codex_pipeline.settings import CodexSettings

    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("CODEX_EMBEDDER", "openai")
    kind = CodexSettings.from_env(os.environ).embedder
    settings = EmbeddingSettings(kind=kind, openai=OpenAIConnectionSettings(backoff_base_s=0.01))
    e = settings.build()
    assert isinstance(e, OpenAIEmbedder)
    res = e.embed(["from the environment"])
    e.close()
    assert server.requests[0].authorized and res.requests == 1
    assert e.base_url == server.base_url and e.retry.backoff_base == 0.01


def test_key_never_in_logs_repr_metadata_or_errors(
    server: LoopbackOpenAI, make_openai, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("openai", "httpx", "httpx2", "httpcore", "httpcore2", "codex_pipeline"):
        caplog.set_level(logging.DEBUG, logger=name)
    e = make_openai()
    server.push("rate_limit", retry_after=0.05)
    server.push("malformed_json")
    e.embed(texts_of(3))
    server.fail_always("server_error")
    with pytest.raises(EmbeddingFailed) as info:
        make_openai(retry=RetrySettings(max_retries=1, backoff_base=0.01)).embed(texts_of(2))
    assert caplog.records, "expected the retries to be logged"
    assert any("retry 1/" in r.getMessage() for r in caplog.records)
    shown = [caplog.text, repr(e), str(e.describe()), str(info.value), *getattr(info.value, "__notes__", [])]
    shown += [r.getMessage() for r in caplog.records] + [str(r.args) for r in caplog.records]
    for s in shown:
        assert SECRET_KEY not in s
        assert SECRET_KEY[5:20] not in s  # not even a fragment
    assert "api_key" not in e.describe() and not any(SECRET_KEY in str(v) for v in vars(e).values())


def test_base_url_credentials_are_not_shown(server: LoopbackOpenAI) -> None:
    url = server.base_url.replace("http://", "http://user:hunter2@") + "?token=abc"
    e = OpenAIEmbedder(connection=OpenAIConnection(SECRET_KEY, url))
    assert "hunter2" not in repr(e) and "abc" not in str(e.describe())
    assert "hunter2" not in repr(e.connection) and SECRET_KEY not in repr(e.connection)
    e.close()
