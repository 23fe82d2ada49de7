"""The Codex code location: thin Dagster wiring around the pure library.

The only layer that imports Dagster; it may import every other layer but ``cli``.
"""

import dagster as dg

from codex_pipeline.defs.assets import dataset_assets
from codex_pipeline.defs.executors import configured_executor
from codex_pipeline.defs.jobs import codex_all_job
from codex_pipeline.defs.proposition_assets import default_proposition_settings, proposition_assets
from codex_pipeline.defs.resources import CodexDuckDB, CodexWarehouse, EmbeddingSettings
from codex_pipeline.defs.run_hygiene import run_hygiene_sensor
from codex_pipeline.defs.schedules import daily_schedule
from codex_pipeline.defs.search_assets import search_index_assets
from codex_pipeline.defs.sensors import version_sensor

defs = dg.Definitions(
    assets=dataset_assets + search_index_assets + proposition_assets,
    jobs=[codex_all_job],
    schedules=[daily_schedule],
    sensors=[version_sensor, run_hygiene_sensor],
    # None (the default) keeps Dagster's multiprocess executor; $CODEX_EXECUTOR=celery
    # spreads the steps over Celery workers (deploy/, docs/deployment.md).
    executor=configured_executor(),
    resources={
        "warehouse": CodexWarehouse(),
        "duckdb": CodexDuckDB(),
        "embedding": EmbeddingSettings.from_environment(),
        "propositions": default_proposition_settings,
    },
)
