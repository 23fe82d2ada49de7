"""The Codex code location: thin Dagster wiring around the pure library."""

import dagster as dg

from .assets import dataset_assets
from .resources import CodexDuckDB, CodexWarehouse

codex_all_job = dg.define_asset_job(
    "codex_all",
    selection=dg.AssetSelection.all(),
    description="Every dataset's assets for one landing day.",
)

defs = dg.Definitions(
    assets=dataset_assets,
    jobs=[codex_all_job],
    resources={
        "warehouse": CodexWarehouse(),
        "duckdb": CodexDuckDB(),
    },
)
