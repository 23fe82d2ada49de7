"""The production configuration in deploy/ is well formed and matches the embedded default.

No server needed: these read the YAML files and build the executor definitions.
"""

from pathlib import Path

import dagster as dg
import pytest
import yaml

from codex_pipeline.datasets.registry import default_registry
from codex_pipeline.defs.assets import dataset_definitions
from codex_pipeline.defs.executors import configured_executor, executor_config
from codex_pipeline.defs.partitions import DEFAULT_PARTITIONS
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.settings import CodexSettings, EnvName

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


def _yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _asset_job(executor: dg.ExecutorDefinition | None) -> dg.JobDefinition:
    """The implicit asset job (what backfills and the UI run) of the Codex assets with ``executor``."""
    defs = dg.Definitions(
        assets=dataset_definitions(default_registry(), DEFAULT_PARTITIONS).assets,
        executor=executor,
        resources={"warehouse": CodexWarehouse(), "embedding": EmbeddingSettings()},
    )
    return defs.resolve_implicit_global_asset_job_def()


def test_production_instance_keeps_the_default_queue_pools_and_monitoring() -> None:
    default, prod = _yaml(REPO / "dagster.yaml"), _yaml(DEPLOY / "dagster.yaml")
    for section in ("concurrency", "run_coordinator", "telemetry"):
        assert prod[section] == default[section], section
    assert prod["run_monitoring"]["enabled"] is True
    assert prod["run_monitoring"]["max_runtime_seconds"] == default["run_monitoring"]["max_runtime_seconds"]


def test_production_storage_is_postgres_from_the_environment() -> None:
    db = _yaml(DEPLOY / "dagster.yaml")["storage"]["postgres"]["postgres_db"]
    for key in ("hostname", "port", "db_name", "username", "password"):
        assert set(db[key]) == {"env"}, f"{key} must come from an environment variable, not the file"
    assert db["scheme"] == "postgresql+psycopg2"  # SQLAlchemy 2.1's bare postgresql:// wants psycopg 3


def test_production_instance_config_validates() -> None:
    from dagster._core.instance.config import dagster_instance_config

    config, _ = dagster_instance_config(str(DEPLOY))
    assert config["run_coordinator"]["class"] == "QueuedRunCoordinator"


def test_workspace_points_at_a_code_server_from_the_environment() -> None:
    (entry,) = _yaml(DEPLOY / "workspace.yaml")["load_from"]
    server = entry["grpc_server"]
    assert server["location_name"] == "codex"
    assert server["host"] == {"env": "CODEX_CODE_SERVER_HOST"} and server["port"] == {"env": "CODEX_CODE_SERVER_PORT"}


def test_celery_settings_validate_against_dagster_celery() -> None:
    pytest.importorskip("dagster_celery")
    from dagster._config import validate_config
    from dagster_celery import celery_executor

    config = executor_config(str(DEPLOY / "celery.yaml"))
    assert validate_config(celery_executor.config_schema.config_type, config).success
    source = config["config_source"]
    # what makes a killed worker's step come back instead of vanishing
    assert source["task_acks_late"] is True and source["worker_prefetch_multiplier"] == 1
    assert source["broker_transport_options"]["visibility_timeout"] >= 3600


def _executor(**environ: str) -> dg.ExecutorDefinition | None:
    return configured_executor(CodexSettings.from_env(environ))


def test_default_executor_is_unchanged() -> None:
    assert _executor() is None
    job = _asset_job(_executor())
    assert job.executor_def.name == "multi_or_in_process_executor"


@pytest.mark.parametrize(("kind", "name"), [("in_process", "in_process"), ("multiprocess", "multiprocess")])
def test_executor_from_the_environment(kind: str, name: str) -> None:
    executor = _executor(**{EnvName.EXECUTOR: kind})
    assert executor is not None and executor.name == name


def test_celery_executor_reads_the_worker_yaml() -> None:
    pytest.importorskip("dagster_celery")
    with pytest.raises(ValueError, match=EnvName.EXECUTOR_CONFIG):
        _executor(**{EnvName.EXECUTOR: "celery"})
    job = _asset_job(_executor(**{EnvName.EXECUTOR: "celery", EnvName.EXECUTOR_CONFIG: str(DEPLOY / "celery.yaml")}))
    assert job.executor_def.name == "codex_celery"


def test_kubernetes_executor_is_configuration_too() -> None:
    """CODEX_EXECUTOR=k8s picks dagster-k8s's step executor, or names the package to install."""
    try:
        import dagster_k8s
    except ImportError:
        with pytest.raises(ImportError, match="pip install dagster-k8s"):
            _executor(**{EnvName.EXECUTOR: "k8s"})
    else:
        assert _executor(**{EnvName.EXECUTOR: "k8s"}) is dagster_k8s.k8s_job_executor


def test_unknown_executor_is_refused() -> None:
    with pytest.raises(ValueError, match="not one of"):
        _executor(**{EnvName.EXECUTOR: "ray"})
