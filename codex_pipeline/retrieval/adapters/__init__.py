"""Framework adapters around :class:`~codex_pipeline.retrieval.Retriever` (optional extras).

``pip install 'codex-pipeline[langchain]'`` for :mod:`.langchain`,
``'codex-pipeline[llamaindex]'`` for :mod:`.llamaindex`. Each maps a
:class:`~codex_pipeline.retrieval.Hit` to the framework's document type with the
hit's ids, spans, locator and context in its metadata, so a parent-document or
citation step downstream needs no second lookup.
"""

from __future__ import annotations

from typing import Any

from codex_pipeline.retrieval.types import Hit


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """A hit's citation fields as plain JSON-ready metadata (everything but the text)."""
    d = hit.as_dict()
    d.pop("text")
    return d
