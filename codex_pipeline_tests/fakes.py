"""A deterministic stand-in for the embedding model, for tests that check wiring, not vectors.

Loading all-MiniLM-L6-v2 and running it costs seconds per materialization; a test of
how assets, checks, sensors or the catalog fit together learns nothing from real
vectors. :class:`FakeEmbedder` implements the same protocol
(:class:`codex_pipeline.embeddings.base.Embedder`): float32 vectors of the model's 384
dimensions, L2-normalized, handed to ``on_batch`` batch by batch like the real
models do. A vector is a signed feature hash of the text's lower-cased words (so
texts that share words are near each other and a lexical query still finds its
chunk) plus a small component from the SHA-256 of the whole text (so different
texts never share a vector). Only ``hashlib`` and NumPy's PCG64 generator are
involved, never Python's per-process ``hash()``: the same text gives the same
bytes in every process and on every run.

Its ``model`` and ``version`` are its own (:data:`FAKE_MODEL`, :data:`FAKE_VERSION`),
so rows it writes are never taken for, or reused as, MiniLM vectors.

Where the fake is used:

- ``FakeEmbedding`` is the Dagster resource override (a subclass of
  :class:`~codex_pipeline.defs.resources.EmbeddingSettings`, so it satisfies the
  assets' ``embedding: EmbeddingSettings`` parameter; defined on first access, so
  importing this module for the embedder alone imports no Dagster).
  ``materialize_dataset`` in ``conftest.py`` uses it unless a test passes another
  resource; the ``fake_embedding`` and ``fake_code_location`` fixtures hand it out.
- The tests' own child processes (``defs/run_child.py``, ``embeddings/embed_child.py``)
  read :data:`EMBEDDER_ENV` (``fake``, the default, or ``real``; :func:`use_real_model`,
  :func:`child_embedder`), so a parent test chooses for its child.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from codex_pipeline.embeddings.base import BatchCallback, Embedder, EmbedResult

#: What goes into ``embedding_model``: never a real model's name.
FAKE_MODEL = "codex-test-fake-embedder"
#: Same dimensions as the default local model (all-MiniLM-L6-v2).
FAKE_DIMENSIONS = 384
#: Bump the trailing number whenever the vectors change.
FAKE_VERSION = f"fake;feature-hash=blake2b;text=sha256;dims={FAKE_DIMENSIONS};norm=l2;v1"
#: ``fake`` (default) or ``real``: which embedder the tests' child scripts build.
EMBEDDER_ENV = "CODEX_TEST_EMBEDDER"

_WORD = re.compile(r"\w+")
_TEXT_WEIGHT = 0.25  # share of the whole-text component in a vector with words


@functools.lru_cache(maxsize=65536)
def _word_slot(word: str, dimensions: int) -> tuple[int, float]:
    """The dimension a word adds to and its sign, from a keyed hash of the word."""
    h = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
    return h % dimensions, 1.0 if (h >> 63) & 1 else -1.0


def _text_component(text: str, dimensions: int) -> np.ndarray:
    """A unit vector drawn from a generator seeded with the text's SHA-256 (same in every process)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16], "little")
    v = np.random.Generator(np.random.PCG64(seed)).standard_normal(dimensions)
    return v / np.linalg.norm(v)


def fake_vector(text: str, dimensions: int = FAKE_DIMENSIONS) -> np.ndarray:
    """The fake vector of one text: float32, ``[dimensions]``, L2 norm 1."""
    words = np.zeros(dimensions)
    for word in _WORD.findall(text.lower()):
        slot, sign = _word_slot(word, dimensions)
        words[slot] += sign
    whole = _text_component(text, dimensions)
    norm = np.linalg.norm(words)
    v = whole if norm == 0 else (1 - _TEXT_WEIGHT) * words / norm + _TEXT_WEIGHT * whole
    return (v / np.linalg.norm(v)).astype(np.float32)


class FakeEmbedder:
    """Deterministic hashed vectors with the :class:`~codex_pipeline.embeddings.base.Embedder` protocol."""

    def __init__(self, dimensions: int = FAKE_DIMENSIONS, batch_size: int = 32) -> None:
        if dimensions < 1 or batch_size < 1:
            raise ValueError("dimensions and batch_size must be positive")
        self.model = FAKE_MODEL
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.version = FAKE_VERSION if dimensions == FAKE_DIMENSIONS else f"{FAKE_VERSION};d={dimensions}"

    def __repr__(self) -> str:
        return f"FakeEmbedder(dimensions={self.dimensions}, batch_size={self.batch_size})"

    def embed(self, texts: Sequence[str], on_batch: BatchCallback | None = None) -> EmbedResult:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        requests = 0
        for start in range(0, len(texts), self.batch_size):
            stop = min(start + self.batch_size, len(texts))
            for i in range(start, stop):
                out[i] = fake_vector(texts[i], self.dimensions)
            requests += 1
            if on_batch is not None:
                on_batch(np.arange(start, stop), out[start:stop].copy())
        return EmbedResult(out, requests)


@functools.cache
def _fake_embedding_class() -> type:
    """:class:`FakeEmbedding`, defined on first use: the fake embedder alone imports no Dagster
    (the tests' child processes that only embed start faster)."""
    from codex_pipeline.defs.resources import EmbeddingSettings

    class FakeEmbedding(EmbeddingSettings):
        """The embedding resource of wiring tests: builds a :class:`FakeEmbedder` whatever ``kind`` says."""

        fake_dimensions: int = FAKE_DIMENSIONS

        def build(self) -> Embedder:  # type: ignore[override]
            return FakeEmbedder(self.fake_dimensions, batch_size=self.local_batch_size)

    FakeEmbedding.__module__ = __name__
    FakeEmbedding.__qualname__ = "FakeEmbedding"
    return FakeEmbedding


def __getattr__(name: str) -> Any:
    if name == "FakeEmbedding":
        return _fake_embedding_class()
    raise AttributeError(name)


def use_real_model() -> bool:
    """Whether ``$CODEX_TEST_EMBEDDER`` asks the tests' child scripts for the real model."""
    value = (os.environ.get(EMBEDDER_ENV) or "fake").strip().lower()
    if value not in ("fake", "real"):
        raise ValueError(f"{EMBEDDER_ENV}={value!r}: expected 'fake' or 'real'")
    return value == "real"


def child_embedder(batch_size: int) -> Embedder:
    """The embedder a child script uses: the real local model or the fake, per ``$CODEX_TEST_EMBEDDER``."""
    if use_real_model():
        from codex_pipeline.embeddings.local_minilm import LocalMiniLMEmbedder

        return LocalMiniLMEmbedder(batch_size=batch_size)
    return FakeEmbedder(batch_size=batch_size)


def with_fake_embedding(defs: Any) -> Any:
    """``defs`` (a ``dg.Definitions``) with its embedding resource swapped for :class:`FakeEmbedding`."""
    import dagster as dg

    return dg.Definitions(
        assets=defs.assets,
        asset_checks=defs.asset_checks,
        jobs=defs.jobs,
        schedules=defs.schedules,
        sensors=defs.sensors,
        executor=defs.executor,
        resources={**(defs.resources or {}), "embedding": _fake_embedding_class()()},
    )
