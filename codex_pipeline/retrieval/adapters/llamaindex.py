"""A LlamaIndex retriever over Codex: ``CodexLlamaIndexRetriever(Retriever(...))``.

Each hit becomes a ``NodeWithScore`` around a ``TextNode`` (``id_`` = chunk id,
``text`` = chunk text, metadata = :func:`~codex_pipeline.retrieval.adapters.hit_metadata`);
the node's ``start_char_idx`` / ``end_char_idx`` are the hit's outer span in the
document's canonical text and its source relationship names the document.
"""

from __future__ import annotations

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode

from codex_pipeline.retrieval.adapters import hit_metadata
from codex_pipeline.retrieval.retriever import Retriever
from codex_pipeline.retrieval.types import Filters, Hit, SearchMode


class CodexLlamaIndexRetriever(BaseRetriever):
    """Search Codex's current corpus from a LlamaIndex query engine."""

    def __init__(
        self,
        retriever: Retriever,
        k: int = 10,
        mode: SearchMode | str = SearchMode.HYBRID,
        filters: Filters | None = None,
    ) -> None:
        super().__init__()
        self.retriever = retriever
        self.k = k
        self.mode = SearchMode(mode)
        self.filters = filters

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.retriever.search(query_bundle.query_str, k=self.k, mode=self.mode, filters=self.filters)
        return [NodeWithScore(node=_node(h), score=h.score) for h in hits]


def _node(hit: Hit) -> TextNode:
    node = TextNode(
        id_=hit.chunk_id,
        text=hit.text,
        metadata=hit_metadata(hit),
        start_char_idx=min(s for s, _ in hit.spans) if hit.spans else None,
        end_char_idx=max(e for _, e in hit.spans) if hit.spans else None,
        # the citation fields are for the reader, not for the LLM prompt or re-embedding
        excluded_llm_metadata_keys=["context", "spans", "evidence", "evidence_text", "ranks"],
        excluded_embed_metadata_keys=list(hit_metadata(hit)),
    )
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=hit.doc_id)
    if hit.parent_chunk_id:
        node.relationships[NodeRelationship.PARENT] = RelatedNodeInfo(node_id=hit.parent_chunk_id)
    return node
