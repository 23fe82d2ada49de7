"""Prometheus text exposition (format 0.0.4), written here: three metric families need no client library.

Request counts by route template (never the raw path: ids would make a series per chunk),
method and status; latency histograms by route; index age per dataset (set at scrape time).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """Counters and histograms of one process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, int], int] = defaultdict(int)
        self._latency: dict[str, list[int]] = {}
        self._latency_sum: dict[str, float] = defaultdict(float)
        self._latency_count: dict[str, int] = defaultdict(int)
        self._builds: dict[str, tuple[int, float]] = {}

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one request: ``route`` is the route template (not the raw path), ``seconds`` its latency."""
        with self._lock:
            self._requests[(route, method, status)] += 1
            counts = self._latency.setdefault(route, [0] * len(BUCKETS))
            for i, edge in enumerate(BUCKETS):
                if seconds <= edge:
                    counts[i] += 1
            self._latency_sum[route] += seconds
            self._latency_count[route] += 1

    def observe_build(self, dataset: str, seconds: float) -> None:
        """Count one background index check (and build) of ``dataset`` that took ``seconds``."""
        with self._lock:
            n, total = self._builds.get(dataset, (0, 0.0))
            self._builds[dataset] = (n + 1, total + seconds)

    def requests(self, route: str) -> int:
        """Requests seen on ``route`` (any method and status)."""
        with self._lock:
            return sum(n for (r, _, _), n in self._requests.items() if r == route)

    def render(self, index_age_s: Mapping[str, float]) -> str:
        """The exposition text, ``index_age_s`` (dataset → seconds since its open index was built) included."""
        out = ["# HELP codex_http_requests_total HTTP requests by route template, method and status.",
               "# TYPE codex_http_requests_total counter"]
        with self._lock:
            for (route, method, status), n in sorted(self._requests.items()):
                out.append(f'codex_http_requests_total{{route="{_label(route)}",method="{method}",status="{status}"}} {n}')
            out += ["# HELP codex_http_request_duration_seconds Request latency by route template.",
                    "# TYPE codex_http_request_duration_seconds histogram"]
            for route in sorted(self._latency):
                lab = _label(route)
                for edge, n in zip(BUCKETS, self._latency[route]):
                    out.append(f'codex_http_request_duration_seconds_bucket{{route="{lab}",le="{edge}"}} {n}')
                out.append(f'codex_http_request_duration_seconds_bucket{{route="{lab}",le="+Inf"}} {self._latency_count[route]}')
                out.append(f'codex_http_request_duration_seconds_sum{{route="{lab}"}} {self._latency_sum[route]:.6f}')
                out.append(f'codex_http_request_duration_seconds_count{{route="{lab}"}} {self._latency_count[route]}')
            builds = dict(self._builds)
        out += ["# HELP codex_index_age_seconds Seconds since the open search index version of a dataset was built.",
                "# TYPE codex_index_age_seconds gauge"]
        out += [f'codex_index_age_seconds{{dataset="{_label(d)}"}} {age:.3f}' for d, age in sorted(index_age_s.items())]
        out += ["# HELP codex_index_checks_total Background index checks (and builds) run by this process.",
                "# TYPE codex_index_checks_total counter"]
        out += [f'codex_index_checks_total{{dataset="{_label(d)}"}} {n}' for d, (n, _) in sorted(builds.items())]
        return "\n".join(out) + "\n"
