"""Jobs over the registry's assets."""

import dagster as dg

codex_all_job = dg.define_asset_job(
    "codex_all",
    selection=dg.AssetSelection.all(),
    description="Every dataset's assets for one landing day.",
)
