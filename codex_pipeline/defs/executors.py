"""Which Dagster executor runs the asset jobs: configuration, not code.

The settings' ``executor`` (``$CODEX_EXECUTOR``) ``default`` leaves the choice to Dagster:
multiprocess for launched runs, in-process under ``materialize`` and in tests.
``celery`` sends every step to Celery workers (``dagster-celery``) on any number of
machines; ``k8s`` runs each step as a Kubernetes Job (``dagster-k8s``) and
``celery_k8s`` both (``dagster-celery-k8s``). Their settings come from the YAML file
named by the settings' ``executor_config`` (``$CODEX_EXECUTOR_CONFIG``, ``deploy/celery.yaml``), in the format of a run
config's ``execution`` block, which is also what ``dagster-celery worker start -y``
reads: the code location and the workers share one file and cannot drift. The
integration packages are imported only when asked for.
"""

import importlib
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

from codex_pipeline.settings import CodexSettings, EnvName

# kind: (module, attribute, PyPI package, config file required)
_DISTRIBUTED = {
    "celery": ("dagster_celery", "celery_executor", "dagster-celery", True),
    "k8s": ("dagster_k8s", "k8s_job_executor", "dagster-k8s", False),
    "celery_k8s": ("dagster_celery_k8s", "celery_k8s_job_executor", "dagster-celery-k8s", True),
}


def executor_config(path: Path | str | None, kind: str = "celery") -> dict[str, Any]:
    """The ``execution.config`` block of an executor YAML such as ``deploy/celery.yaml``."""
    if not path:
        raise ValueError(
            f"{EnvName.EXECUTOR}={kind} needs {EnvName.EXECUTOR_CONFIG}: the path of the YAML "
            "the Celery workers are started with (see deploy/celery.yaml)"
        )
    loaded = yaml.safe_load(Path(path).read_text()) or {}
    config = (loaded.get("execution") or {}).get("config")
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected an `execution: config:` block (the dagster-celery worker format)")
    return config


def configured_executor(settings: CodexSettings) -> dg.ExecutorDefinition | None:
    """The executor for ``Definitions(executor=...)``; ``None`` keeps Dagster's default."""
    kind = settings.executor
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
        raise ImportError(f"{EnvName.EXECUTOR}={kind} needs the package {package} (pip install {package})") from exc
    if needs_config or settings.executor_config:
        return executor.configured(executor_config(settings.executor_config, kind), name=f"codex_{kind}")
    return executor
