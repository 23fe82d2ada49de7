"""Which Dagster executor runs the asset jobs: configuration, not code.

``$CODEX_EXECUTOR`` unset (the embedded default) leaves the choice to Dagster:
multiprocess for launched runs, in-process under ``materialize`` and in tests.
``celery`` sends every step to Celery workers (``dagster-celery``) on any number of
machines; ``k8s`` runs each step as a Kubernetes Job (``dagster-k8s``) and
``celery_k8s`` both (``dagster-celery-k8s``). Their settings come from the YAML file
named by ``$CODEX_EXECUTOR_CONFIG`` (``deploy/celery.yaml``), in the format of a run
config's ``execution`` block, which is also what ``dagster-celery worker start -y``
reads: the code location and the workers share one file and cannot drift. The
integration packages are imported only when asked for.
"""

import importlib
import os
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

EXECUTOR_ENV = "CODEX_EXECUTOR"
EXECUTOR_CONFIG_ENV = "CODEX_EXECUTOR_CONFIG"
# kind: (module, attribute, PyPI package, config file required)
_DISTRIBUTED = {
    "celery": ("dagster_celery", "celery_executor", "dagster-celery", True),
    "k8s": ("dagster_k8s", "k8s_job_executor", "dagster-k8s", False),
    "celery_k8s": ("dagster_celery_k8s", "celery_k8s_job_executor", "dagster-celery-k8s", True),
}
KINDS = ("default", "in_process", "multiprocess", *_DISTRIBUTED)


def configured_executor_kind() -> str:
    """``$CODEX_EXECUTOR`` normalised; ``default`` when unset."""
    kind = (os.environ.get(EXECUTOR_ENV) or "default").strip().lower().replace("-", "_")
    if kind not in KINDS:
        raise ValueError(f"{EXECUTOR_ENV}={kind!r} is not one of {', '.join(KINDS)}")
    return kind


def executor_config(path: str | None = None) -> dict[str, Any]:
    """The ``execution.config`` block of an executor YAML such as ``deploy/celery.yaml``."""
    path = path or os.environ.get(EXECUTOR_CONFIG_ENV)
    if not path:
        raise ValueError(
            f"{EXECUTOR_ENV}={configured_executor_kind()} needs {EXECUTOR_CONFIG_ENV}: the path of the YAML "
            "the Celery workers are started with (see deploy/celery.yaml)"
        )
    loaded = yaml.safe_load(Path(path).read_text()) or {}
    config = (loaded.get("execution") or {}).get("config")
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected an `execution: config:` block (the dagster-celery worker format)")
    return config


def configured_executor() -> dg.ExecutorDefinition | None:
    """The executor for ``Definitions(executor=...)``; ``None`` keeps Dagster's default."""
    kind = configured_executor_kind()
    if kind == "in_process":
        return dg.in_process_executor
    if kind == "multiprocess":
        return dg.multiprocess_executor
    if kind not in _DISTRIBUTED:
        return None
    module, attribute, package, needs_config = _DISTRIBUTED[kind]
    try:
        executor: dg.ExecutorDefinition = getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        raise ImportError(f"{EXECUTOR_ENV}={kind} needs the package {package} (pip install {package})") from exc
    if needs_config or os.environ.get(EXECUTOR_CONFIG_ENV):
        return executor.configured(executor_config(), name=f"codex_{kind}")
    return executor
