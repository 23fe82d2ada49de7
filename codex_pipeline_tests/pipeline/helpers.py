"""What the day-step tests share: a log that remembers, a tiny embedder, landing a sample day."""

import datetime as dt
import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from codex_pipeline.embeddings.base import BatchCallback, EmbedResult
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import SAMPLE_LANDING


class ListLog:
    """A ``StepLog`` that keeps (level, message) pairs."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str]] = []

    def info(self, msg: str, *args: object) -> None:
        self.records.append(("info", msg))

    def warning(self, msg: str, *args: object) -> None:
        self.records.append(("warning", msg))

    def error(self, msg: str, *args: object) -> None:
        self.records.append(("error", msg))

    def at(self, *levels: str) -> list[str]:
        return [m for level, m in self.records if level in levels]


class HashEmbedder:
    """Eight dimensions from a text's SHA-256: deterministic, instant, and counts its calls."""

    model = "pipeline-test-hash"
    version = "sha256-8d-v1"
    dimensions = 8

    def __init__(self) -> None:
        self.texts = 0

    def embed(self, texts: Sequence[str], on_batch: BatchCallback | None = None) -> EmbedResult:
        self.texts += len(texts)
        raw = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], np.uint8) for t in texts]
        vecs = np.asarray(raw, np.float32).reshape(len(texts), self.dimensions) + 1.0
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        if on_batch is not None and len(texts):
            on_batch(np.arange(len(texts)), vecs)
        return EmbedResult(vecs, requests=1 if len(texts) else 0)


def land_sample(wh: Warehouse, dataset: str, day: str, into: str | None = None) -> Path:
    """Copy a bundled sample day into the warehouse's landing folder of ``into`` (default ``dataset``)."""
    dest = wh.landing_dir(into or dataset, dt.date.fromisoformat(day))
    shutil.copytree(SAMPLE_LANDING / dataset / day, dest, dirs_exist_ok=True)
    return dest
