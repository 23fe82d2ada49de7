"""``python -m codex_pipeline_tests.defs.run_child DAY [PAUSE_AFTER MARKER]``: a run as the CLI starts it.

Sweeps dead runs, then materializes the narrative dataset for ``DAY`` in this
process on ``$DAGSTER_HOME``'s instance, tagged with this process (what
``codex materialize`` does with ``codex_all``), with the warehouse of the environment's settings
(``$CODEX_DATA_DIR``, checkpoint tuning), as the code location makes it. The embedder is the tests' fake
unless ``$CODEX_TEST_EMBEDDER=real`` asks for the local model (``fakes.py``). With
``PAUSE_AFTER``, the embedder stops for good after that many batches (marker file
written) so the parent can SIGKILL the run mid-embedding. Exit status 0 when the
run succeeded.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dagster as dg

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.defs.run_hygiene import local_run_tags, sweep_dead_runs
from codex_pipeline.settings import CodexSettings
from codex_pipeline_tests.embeddings.pausing import PausingEmbedder
from codex_pipeline_tests.fakes import FakeEmbedder, use_real_model


class PausingEmbedding(EmbeddingSettings):
    """The configured embedder (or the fake), made to stop after ``pause_after`` batches (0: never)."""

    pause_after: int = 0
    marker: str = ""
    fake: bool = True

    def build(self):  # type: ignore[no-untyped-def]
        inner = FakeEmbedder(batch_size=self.local_batch_size) if self.fake else super().build()
        return PausingEmbedder(inner, self.pause_after, Path(self.marker)) if self.pause_after else inner


def main(argv: list[str]) -> int:
    day = argv[0]
    pause_after, marker = (int(argv[1]), argv[2]) if len(argv) > 2 else (0, "")
    with dg.DagsterInstance.get() as instance:
        print(f"sweep: {sweep_dead_runs(instance)}", flush=True)
        result = dg.materialize(
            build_dataset_assets(get_dataset("narrative")),
            partition_key=day,
            instance=instance,
            tags=local_run_tags(),
            resources={
                "warehouse": CodexWarehouse.from_settings(CodexSettings.from_env(os.environ)),
                "embedding": PausingEmbedding(local_batch_size=4, pause_after=pause_after, marker=marker,
                                              fake=not use_real_model()),
            },
            raise_on_error=False,
        )
        print(f"run {result.run_id}: {'ok' if result.success else 'FAILED'}", flush=True)
        return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
