"""Embeddings for chunk tables: one interface, an OpenAI and a local model, reuse rules.

Imports ``core``, ``transport`` and ``warehouse`` only; nothing here imports Dagster or
reads the environment: the assets call :func:`make_embedder` with settings their
resource read, and :func:`embed_partition`. Importing this package does not import
torch or the OpenAI client: each embedder module is loaded when it is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from codex_pipeline.embeddings.base import (
    BatchCallback,
    Embedder,
    EmbeddingError,
    EmbeddingFailed,
    EmbedResult,
    EmptyInput,
    InputTooLong,
    InvalidResponse,
    LocalEmbedderMissing,
    MissingAPIKey,
    WeightsMismatch,
)
from codex_pipeline.embeddings.reuse import (
    EmbedCounts,
    EmbeddingCheckpoint,
    EmbeddingPlan,
    EmbedOutcome,
    VectorLookup,
    checkpoint_schema,
    embed_partition,
    embeddings_schema,
    input_hash,
    input_hashes,
    plan_embeddings,
)

if TYPE_CHECKING:
    from codex_pipeline.embeddings.local_minilm import LocalMiniLMEmbedder
    from codex_pipeline.embeddings.openai_client import OpenAIEmbedder

KINDS = ("local", "openai")


def make_embedder(kind: str = "local", **opts: Any) -> Embedder:
    """An embedder from configuration.

    ``kind`` is ``"local"`` (all-MiniLM-L6-v2, the default: no key, no network) or
    ``"openai"`` (text-embedding-3-large at 1536 dimensions, reached through
    ``connection=OpenAIConnection(...)``). ``opts`` go to the class:
    :class:`~.local_minilm.LocalMiniLMEmbedder` or :class:`~.openai_client.OpenAIEmbedder`.
    """
    kind = kind.strip().lower()
    if kind == "local":
        from codex_pipeline.embeddings.local_minilm import LocalMiniLMEmbedder

        return LocalMiniLMEmbedder(**opts)
    if kind == "openai":
        from codex_pipeline.embeddings.openai_client import OpenAIEmbedder

        return OpenAIEmbedder(**opts)
    raise ValueError(f"unknown embedder kind {kind!r}; expected one of {', '.join(KINDS)}")


def __getattr__(name: str) -> Any:  # lazy: keep torch / openai out of a bare import
    if name == "LocalMiniLMEmbedder":
        from codex_pipeline.embeddings.local_minilm import LocalMiniLMEmbedder

        return LocalMiniLMEmbedder
    if name == "OpenAIEmbedder":
        from codex_pipeline.embeddings.openai_client import OpenAIEmbedder

        return OpenAIEmbedder
    raise AttributeError(name)


__all__ = [
    "BatchCallback",
    "EmbedCounts",
    "EmbedOutcome",
    "EmbedResult",
    "Embedder",
    "EmbeddingCheckpoint",
    "EmbeddingError",
    "EmbeddingFailed",
    "EmbeddingPlan",
    "EmptyInput",
    "InputTooLong",
    "InvalidResponse",
    "KINDS",
    "LocalEmbedderMissing",
    "LocalMiniLMEmbedder",
    "MissingAPIKey",
    "OpenAIEmbedder",
    "VectorLookup",
    "WeightsMismatch",
    "checkpoint_schema",
    "embed_partition",
    "embeddings_schema",
    "input_hash",
    "input_hashes",
    "make_embedder",
    "plan_embeddings",
]
