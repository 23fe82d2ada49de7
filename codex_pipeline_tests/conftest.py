"""Shared test helpers: a throw-away data directory and Dagster materializations into it."""

from __future__ import annotations

import datetime as dt
import shutil
import signal
from pathlib import Path

import dagster as dg
import pytest

from codex_pipeline.warehouse.storage import Warehouse

FIXTURES = Path(__file__).parent / "fixtures"
SAMPLE_LANDING = Path(__file__).resolve().parents[1] / "codex_pipeline" / "sample_landing"


def pytest_configure(config: pytest.Config) -> None:
    """Handle SIGINT as a suite started from a terminal does. One started in the background (CI,
    ``nohup``) begins with SIGINT ignored, and every in-process Dagster run points SIGTERM at SIGINT's
    handler when it ends: SIGTERM would be ignored from then on, by this process and by every process
    a later test starts (a process pool's exit, which terminates its workers, waited forever)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Warehouse:
    """An empty data directory, also exported as CODEX_DATA_DIR for the Dagster layer."""
    root = tmp_path / "data"
    monkeypatch.setenv("CODEX_DATA_DIR", str(root))
    return Warehouse(root)


def land(warehouse: Warehouse, dataset: str, day: str, source: Path) -> Path:
    """Copy a folder (or single file) into ``landing/<dataset>/<day>/``."""
    dest = warehouse.landing_dir(dataset, dt.date.fromisoformat(day))
    dest.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, dest, dirs_exist_ok=True)
    else:
        shutil.copy(source, dest / source.name)
    return dest


def materialize_dataset(
    warehouse: Warehouse,
    dataset: str,
    day: str,
    instance: dg.DagsterInstance | None = None,
    embedding: dg.ConfigurableResource | None = None,
) -> dg.ExecuteInProcessResult:
    """Materialize every asset of one dataset for one day through Dagster (checks included)."""
    from codex_pipeline.defs.assets import assets_by_dataset
    from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings

    return dg.materialize(
        assets_by_dataset[dataset],
        partition_key=day,
        resources={"warehouse": CodexWarehouse(data_dir=str(warehouse.root)), "embedding": embedding or EmbeddingSettings()},
        instance=instance or dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
