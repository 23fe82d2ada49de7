"""Real PostgreSQL and Redis servers for the scale-out tests, one of each per session.

Tests that use them are in the slow lane (``slow_fixture``); the configuration tests
beside them are quick. Both are started by the tests themselves (on free loopback
ports, in temporary directories) and stopped afterwards; ``scripts/install_services.sh``
installs the Debian packages. Without them the tests skip, except under ``CI=true``, where a
missing server is a failure.
"""

import os
from collections.abc import Iterator

import pytest

from codex_pipeline_tests.conftest import slow_fixture
from codex_pipeline_tests.deploy.services import Postgres, Redis, missing_prerequisites, postgres_server, redis_server


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "deploy: runs Codex on a real PostgreSQL instance with Celery workers and Redis "
        "(needs `bash scripts/install_services.sh`); deselect with -m 'not deploy'",
    )


def require_services() -> None:
    """Skip without PostgreSQL, Redis or the dagster-postgres/celery packages; fail under CI=true."""
    missing = missing_prerequisites()
    if not missing:
        return
    reason = "the scale-out tests need " + ", ".join(missing) + " (bash scripts/install_services.sh)"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + " — CI=true, so this is a failure, not a skip")
    pytest.skip(reason)


@pytest.fixture(scope="session")
@slow_fixture("real PostgreSQL and Redis servers")
def postgres() -> Iterator[Postgres]:
    require_services()
    with postgres_server() as pg:
        yield pg


@pytest.fixture(scope="session")
@slow_fixture("real PostgreSQL and Redis servers")
def redis_broker() -> Iterator[Redis]:
    require_services()
    with redis_server() as server:
        yield server
