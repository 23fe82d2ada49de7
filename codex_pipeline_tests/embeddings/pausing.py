"""A real embedder that stops for good after a number of batches, to be killed there.

Kill tests need the victim to be mid-embedding when the signal lands, however fast
or loaded the machine is: the wrapped (real) embedder hands each finished batch
on as usual, and after ``pause_after`` of them the process writes ``marker`` and
sleeps until it is killed. Nothing about the vectors is faked.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from codex_pipeline.embeddings.base import BatchCallback, Embedder, EmbedResult

WORDS = (
    "council permit drain storm budget hearing motion vote street water parcel zoning notice public "
    "meeting library transit bridge clerk committee resident housing study amendment recess"
).split()


def sample_texts(n: int, words: int = 40, seed: int = 7) -> list[str]:
    """``n`` distinct short texts (one model sequence each)."""
    rng = random.Random(seed)
    return [f"Notice {i}. " + " ".join(rng.choice(WORDS) for _ in range(words)) + "." for i in range(n)]


class PausingEmbedder:
    """Delegates to ``inner``; after ``pause_after`` batches writes ``marker`` and blocks forever."""

    def __init__(self, inner: Embedder, pause_after: int, marker: Path) -> None:
        self.inner, self.pause_after, self.marker = inner, pause_after, marker
        self.model, self.version, self.dimensions = inner.model, inner.version, inner.dimensions

    def embed(self, texts: Sequence[str], on_batch: BatchCallback | None = None) -> EmbedResult:
        calls = 0

        def forward(idx: np.ndarray, vecs: np.ndarray) -> None:
            nonlocal calls
            if on_batch is not None:
                on_batch(idx, vecs)
            calls += 1
            if calls == self.pause_after:
                self.marker.write_text(str(calls))
                threading.Event().wait()  # until SIGKILL

        return self.inner.embed(texts, on_batch=forward)


class RecordingEmbedder:
    """Delegates to ``inner`` and records every text it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.sent: list[str] = []
        self.model, self.version, self.dimensions = inner.model, inner.version, inner.dimensions

    def embed(self, texts: Sequence[str], on_batch: BatchCallback | None = None) -> EmbedResult:
        self.sent.extend(texts)
        return self.inner.embed(texts, on_batch=on_batch)
