"""The Codex code location: thin Dagster wiring around the pure library."""

import dagster as dg

from .assets import dataset_assets
from .jobs import codex_all_job
from .resources import CodexDuckDB, CodexWarehouse, EmbeddingSettings
from .schedules import daily_schedule
from .sensors import version_sensor

defs = dg.Definitions(
    assets=dataset_assets,
    jobs=[codex_all_job],
    schedules=[daily_schedule],
    sensors=[version_sensor],
    resources={
        "warehouse": CodexWarehouse(),
        "duckdb": CodexDuckDB(),
        "embedding": EmbeddingSettings(kind=dg.EnvVar("CODEX_EMBEDDER").get_value("local") or "local"),
    },
)
