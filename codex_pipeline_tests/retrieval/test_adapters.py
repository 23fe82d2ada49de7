"""The LangChain and LlamaIndex adapters, against the real packages (skipped when not installed)."""

from __future__ import annotations

import pytest

from codex_pipeline.retrieval import Filters, Retriever, SearchMode

QUERY = "29 CFR 1910.212(a)(1) machine guarding"


def test_langchain_retriever(retriever: Retriever) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.retrievers import BaseRetriever

    from codex_pipeline.retrieval.adapters.langchain import CodexLangChainRetriever

    lc = CodexLangChainRetriever(retriever=retriever, k=3)
    assert isinstance(lc, BaseRetriever)
    docs = lc.invoke(QUERY)
    hits = retriever.search(QUERY, k=3)
    assert [d.id for d in docs] == [h.chunk_id for h in hits]
    assert [d.page_content for d in docs] == [h.text for h in hits]
    first = docs[0].metadata
    assert first["chunk_id"] == hits[0].chunk_id and first["locator"] == hits[0].locator
    assert first["spans"] == [list(s) for s in hits[0].spans] and "text" not in first
    # per-call options and filters reach the Retriever
    typed = CodexLangChainRetriever(
        retriever=retriever, k=5, mode=SearchMode.BM25, filters=Filters.of(chunk_types=["osha_case_summary"])
    ).invoke(QUERY)
    assert typed and {d.metadata["chunk_type"] for d in typed} == {"osha_case_summary"}


def test_langchain_retriever_in_a_chain(retriever: Retriever) -> None:
    """It composes like any LangChain runnable (batch, pipe)."""
    pytest.importorskip("langchain_core")
    from langchain_core.runnables import RunnableLambda

    from codex_pipeline.retrieval.adapters.langchain import CodexLangChainRetriever

    chain = CodexLangChainRetriever(retriever=retriever, k=2) | RunnableLambda(lambda docs: [d.metadata["dataset"] for d in docs])
    out = chain.batch(["excavation cave-in", "basement development permit"])
    assert out[0][0] == "osha_safety" and out[1][0] == "permit_signals"


def test_llamaindex_retriever(retriever: Retriever) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import MetadataMode, NodeRelationship

    from codex_pipeline.retrieval.adapters.llamaindex import CodexLlamaIndexRetriever

    li = CodexLlamaIndexRetriever(retriever, k=3)
    assert isinstance(li, BaseRetriever)
    nodes = li.retrieve(QUERY)
    hits = retriever.search(QUERY, k=3)
    assert [n.node.node_id for n in nodes] == [h.chunk_id for h in hits]
    assert [n.score for n in nodes] == pytest.approx([h.score for h in hits])
    node = nodes[0].node
    assert node.get_content() == hits[0].text
    assert (node.start_char_idx, node.end_char_idx) == (hits[0].spans[0][0], hits[0].spans[-1][1])
    assert node.relationships[NodeRelationship.SOURCE].node_id == hits[0].doc_id
    if hits[0].parent_chunk_id:
        assert node.relationships[NodeRelationship.PARENT].node_id == hits[0].parent_chunk_id
    # the locator is shown to an LLM with the text; spans, context and ranks are for the reader only
    llm = node.get_metadata_str(mode=MetadataMode.LLM)
    assert f"locator: {hits[0].locator}" in llm
    assert not any(line.startswith(("context:", "spans:", "evidence", "ranks:")) for line in llm.splitlines())
    assert node.get_metadata_str(mode=MetadataMode.EMBED) == ""
