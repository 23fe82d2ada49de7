"""The code location built from a settings value: per-concern definitions, merged.

:func:`build_definitions` is all a code location is: ``defs/__init__.py`` calls it with
the environment's settings, the CLI with its own (a ``--data-dir`` over them), and tests
with any, side by side in one process.
"""

import dagster as dg

from codex_pipeline.datasets.registry import DatasetRegistry
from codex_pipeline.defs.assets import dataset_definitions
from codex_pipeline.defs.executors import configured_executor
from codex_pipeline.defs.jobs import codex_all_job
from codex_pipeline.defs.partitions import daily_partitions
from codex_pipeline.defs.proposition_assets import proposition_definitions
from codex_pipeline.defs.resources import resources_from_settings
from codex_pipeline.defs.run_hygiene import run_hygiene_sensor
from codex_pipeline.defs.schedules import daily_schedule
from codex_pipeline.defs.search_assets import search_definitions
from codex_pipeline.defs.sensors import build_version_sensor
from codex_pipeline.settings import CodexSettings


def operations_definitions(settings: CodexSettings, registry: DatasetRegistry) -> dg.Definitions:
    """What runs the assets: the job, the daily schedule, the sensors, the executor and the resources."""
    return dg.Definitions(
        jobs=[codex_all_job],
        schedules=[daily_schedule],
        sensors=[build_version_sensor(list(registry)), run_hygiene_sensor],
        # None (the default) keeps Dagster's multiprocess executor; executor "celery"
        # spreads the steps over Celery workers (deploy/, docs/deployment.md).
        executor=configured_executor(settings),
        resources=resources_from_settings(settings),
    )


def build_definitions(settings: CodexSettings, registry: DatasetRegistry | None = None) -> dg.Definitions:
    """The whole code location for ``settings`` (``registry``: one already built from them)."""
    registry = registry or DatasetRegistry.build(settings)
    partitions = daily_partitions(settings)
    return dg.Definitions.merge(
        dataset_definitions(registry, partitions),
        proposition_definitions(registry, partitions),
        search_definitions(registry, partitions),
        operations_definitions(settings, registry),
    )
