"""One retry policy for every request Codex sends to an OpenAI-compatible API, run by tenacity.

Codex retries itself rather than leaving it to the SDK (whose ``max_retries`` is 0)
because a run reports what its requests cost: every request and retry is counted,
every wait is logged, a ``Retry-After`` longer than the run should wait fails at
once instead of stalling a worker, and a 200 with an unusable body is retried a
bounded number of times (a server that keeps answering garbage is a bug, not
congestion).
"""

from __future__ import annotations

import email.utils
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import openai
import tenacity

from codex_pipeline.transport.connection import RetrySettings
from codex_pipeline.transport.errors import RequestFailed, UnusableResponse

log = logging.getLogger(__name__)
T = TypeVar("T")


class Tally:
    """Running totals of one call, shared by its worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.retries = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0

    def add(
        self, *, requests: int = 0, retries: int = 0, input_tokens: int = 0, output_tokens: int = 0, cost_usd: float = 0.0
    ) -> None:
        """Adds to the running totals; safe from any worker thread."""
        with self._lock:
            self.requests += requests
            self.retries += retries
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens
            self.cost_usd += cost_usd


@dataclass(frozen=True)
class Fault:
    """A failed attempt worth retrying: its name in messages and how long the server asked to wait."""

    kind: str
    retry_after: float | None = None
    invalid: bool = False


def classify(exc: BaseException | None, timeout: float) -> Fault | None:
    """The retryable fault an exception stands for; None for anything not to retry."""
    if isinstance(exc, UnusableResponse | openai.APIResponseValidationError):
        return Fault(f"invalid response: {exc}", invalid=True)
    if isinstance(exc, openai.APITimeoutError):
        return Fault(f"timeout (no answer within {timeout:g} s)")
    if isinstance(exc, openai.APIConnectionError):
        return Fault(f"connection error ({type(exc.__cause__ or exc).__name__})")
    if isinstance(exc, openai.APIStatusError) and (exc.status_code >= 500 or exc.status_code in (408, 409, 429)):
        kind = "HTTP 429 rate limited" if exc.status_code == 429 else f"HTTP {exc.status_code}"
        return Fault(kind, retry_after_seconds(exc.response.headers))
    return None


def retry_after_seconds(headers: object) -> float | None:
    """``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date), else None."""
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


_HINTS = {401: " (check OPENAI_API_KEY)", 403: " (check OPENAI_API_KEY)", 404: " (check the model name and the base URL)"}


class Retrier:
    """Runs one request under a :class:`RetrySettings`, counting into a :class:`Tally`.

    ``redact`` cleans every message that leaves it (log lines and :class:`RequestFailed`).
    """

    def __init__(
        self,
        policy: RetrySettings,
        *,
        timeout: float,
        redact: Callable[[str], str] = str,
        seed: int | None = None,
    ) -> None:
        self.policy = policy
        self.timeout = timeout
        self.redact = redact
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()

    def run(self, attempt: Callable[[], T], *, label: str, tally: Tally) -> T:
        """``attempt()``'s result, retried as the policy says; :class:`RequestFailed` when it cannot be had."""
        call = _Call(self, label, tally)
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(lambda exc: classify(exc, self.timeout) is not None),
            stop=call.stop,
            wait=call.wait,
            before_sleep=call.before_sleep,
            retry_error_callback=call.give_up,
        )
        try:
            return retrying(call.counted, attempt)
        except openai.APIStatusError as exc:  # not retryable (the retryable ones end in give_up)
            status = exc.status_code
            message = f"HTTP {status}, not retryable{_HINTS.get(status, '')}: {exc.message}"
            raise RequestFailed(self.redact(message), kind=f"HTTP {status}", attempts=call.attempts, status=status) from None

    def delay(self, retry: int, retry_after: float | None) -> float:
        """Backoff for the ``retry``-th retry (from 1), or at least ``retry_after`` plus a little jitter."""
        with self._rng_lock:
            delay = self.policy.backoff(retry - 1, self._rng)
            jitter = self._rng.uniform(0, 1)
        if retry_after is not None and retry_after > 0:
            # jitter so parallel requests told to wait alike do not all come back in the same instant
            delay = retry_after + jitter * min(1.0, 0.1 * retry_after)
        return delay


class _Call:
    """The tenacity callbacks of one request, with its counts."""

    def __init__(self, retrier: Retrier, label: str, tally: Tally) -> None:
        self.r = retrier
        self.label = label
        self.tally = tally
        self.attempts = 0
        self.invalid = 0
        self.failure: RequestFailed | None = None

    def counted(self, attempt: Callable[[], T]) -> T:
        self.attempts += 1
        self.tally.add(requests=1)
        return attempt()

    def _fault(self, rs: tenacity.RetryCallState) -> Fault:
        fault = classify(rs.outcome.exception() if rs.outcome else None, self.r.timeout)
        assert fault is not None  # only retryable faults reach stop / wait
        return fault

    def stop(self, rs: tenacity.RetryCallState) -> bool:
        f, policy, n = self._fault(rs), self.r.policy, rs.attempt_number
        kind = f.kind.split(":")[0]
        if f.invalid:
            self.invalid += 1
            if self.invalid > policy.max_invalid_responses:
                kind = "malformed JSON" if "malformed JSON" in f.kind else "invalid response"
                return self._fail(f"{f.kind} (after {n} attempts; at most {policy.max_invalid_responses} retries "
                                  "for unusable responses)", kind, n)
        if n > policy.max_retries:
            return self._fail(f"{f.kind}; gave up after {n} attempts", kind, n)
        if f.retry_after is not None and f.retry_after > policy.max_retry_after:
            return self._fail(f"{f.kind}: server asked to wait {f.retry_after:g} s, more than max_retry_after="
                              f"{policy.max_retry_after:g} s", f.kind, n)
        return False

    def _fail(self, message: str, kind: str, attempts: int) -> bool:
        self.failure = RequestFailed(self.r.redact(message), kind=kind, attempts=attempts, transient=True)
        return True

    def wait(self, rs: tenacity.RetryCallState) -> float:
        return self.r.delay(rs.attempt_number, self._fault(rs).retry_after)

    def before_sleep(self, rs: tenacity.RetryCallState) -> None:
        self.tally.add(retries=1)
        log.warning(
            "%s: %s; retry %d/%d in %.2f s",
            self.label, self.r.redact(self._fault(rs).kind), rs.attempt_number, self.r.policy.max_retries,
            rs.upcoming_sleep,
        )

    def give_up(self, rs: tenacity.RetryCallState) -> None:
        assert self.failure is not None
        raise self.failure from None
