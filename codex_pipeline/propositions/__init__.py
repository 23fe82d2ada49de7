"""Propositions (seed 002): atomic factual statements derived from contract-checked chunks.

Each proposition keeps a back-reference to its parent chunk and the exact character
ranges of the document's canonical text it rests on. Two extractors share one
interface (:class:`~.base.Extractor`): the offline, deterministic default
(:mod:`.offline`) and an OpenAI chat extractor (:mod:`.openai_chat`). Extraction is
cached by the parent's ``content_hash`` plus the extractor, its version and the
prompt version (:mod:`.step`), and an LLM run is bounded by a cost cap (:mod:`.cost`).

Imports ``core``, ``transport``, ``warehouse`` and ``embeddings`` only; nothing here
imports Dagster or reads the environment. The propositions day step
(``pipeline/propositions_step.py``) calls :func:`~.step.extract_day` with the extractor it is given.
"""

from __future__ import annotations

from typing import Any

from codex_pipeline.propositions.base import ChunkInput, Extraction, Extractor, Statement
from codex_pipeline.propositions.table import PROPOSITIONS_SCHEMA, make_proposition_id

KINDS = ("offline", "openai")


def extractor_identity(kind: str = "offline") -> str:
    """``name|version|prompt_version`` of an extractor kind, without building it (no key needed): for sensors."""
    kind = kind.strip().lower()
    if kind == "offline":
        from codex_pipeline.propositions import offline as mod
    elif kind == "openai":
        from codex_pipeline.propositions import openai_chat as mod  # type: ignore[no-redef]
    else:
        raise ValueError(f"unknown proposition extractor {kind!r}; expected one of {', '.join(KINDS)}")
    return f"{mod.NAME}|{mod.VERSION}|{mod.PROMPT_VERSION}"


def make_extractor(kind: str = "offline", **opts: Any) -> Extractor:
    """``offline`` (the default: deterministic, no model) or ``openai`` (gpt-4o-mini chat; ``opts`` go to
    :class:`~.openai_chat.OpenAIChatExtractor`, the server in ``connection=OpenAIConnection(...)``)."""
    kind = kind.strip().lower()
    if kind == "offline":
        from codex_pipeline.propositions.offline import OfflineExtractor

        return OfflineExtractor()
    if kind == "openai":
        from codex_pipeline.propositions.openai_chat import OpenAIChatExtractor

        return OpenAIChatExtractor(**opts)
    raise ValueError(f"unknown proposition extractor {kind!r}; expected one of {', '.join(KINDS)}")

__all__ = [
    "KINDS",
    "PROPOSITIONS_SCHEMA",
    "ChunkInput",
    "Extraction",
    "Extractor",
    "Statement",
    "extractor_identity",
    "make_extractor",
    "make_proposition_id",
]
