"""A LangChain ``BaseRetriever`` over Codex: ``CodexLangChainRetriever(retriever=Retriever(...))``.

Each hit becomes a ``Document`` whose ``page_content`` is the chunk text and whose
``metadata`` carries :func:`~codex_pipeline.retrieval.adapters.hit_metadata`
(ids, score, spans, evidence, locator, context); ``id`` is the chunk id.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from codex_pipeline.retrieval.adapters import hit_metadata
from codex_pipeline.retrieval.retriever import Retriever
from codex_pipeline.retrieval.types import Filters, SearchMode


class CodexLangChainRetriever(BaseRetriever):
    """Search Codex's current corpus from a LangChain chain or agent."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Retriever
    k: int = 10
    mode: SearchMode = SearchMode.HYBRID
    filters: Filters | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        hits = self.retriever.search(
            query, k=kwargs.get("k", self.k), mode=kwargs.get("mode", self.mode), filters=kwargs.get("filters", self.filters)
        )
        return [Document(id=h.chunk_id, page_content=h.text, metadata=hit_metadata(h)) for h in hits]
