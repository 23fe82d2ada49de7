"""Schemathesis against the server's own OpenAPI description: no request the schema allows makes it fail.

Bounded (``max_examples`` per operation) to stay in the quick lane: every response must be a
documented status with a body matching its schema, and never a 5xx.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from codex_pipeline_tests.serve.conftest import Server

MAX_EXAMPLES = 15


def test_every_operation_conforms_to_its_schema(server: Server) -> None:
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    failures = []
    ran = 0
    for result in schema.get_all_operations():
        operation = result.ok()

        @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case: schemathesis.Case) -> None:
            response = case.call(base_url=server.url)
            assert response.status_code < 500, (case.method, case.formatted_path, response.status_code, response.text[:300])
            case.validate_response(response, checks=[status_code_conformance, response_schema_conformance])

        test = operation.as_strategy()
        try:
            given(case=test)(check)()
            ran += 1
        except Exception as exc:  # collect every operation's failure, then report them together
            failures.append(f"{operation.method.upper()} {operation.path}: {' '.join(str(exc).split())[:500]}")
    assert ran >= 8 or failures, ran
    assert not failures, "\n".join(failures)
