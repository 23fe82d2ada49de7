"""A query analysed once: what ranking, evidence and context read from it.

BM25 needs the query's words and identifiers (an identifier is searched whole when an
index knows it, else by its parts: :class:`~codex_pipeline.retrieval.lexical.QueryTerms`),
evidence and unit selection need every term it could match in a text, and the vector
ranking and the units' cosine need its embedding (BM25 search scores units by the words alone). Each is computed here once per search
and the value is passed down, so no step re-analyses the string.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field

import numpy as np

from codex_pipeline.retrieval.lexical import QueryTerms, analyze_query


@dataclass(frozen=True, eq=False)
class AnalyzedQuery:
    """The query text, its lexical terms and (for vector and hybrid search) its embedding."""

    text: str
    terms: QueryTerms
    vector: np.ndarray | None = None
    matched: frozenset[str] = field(default=frozenset())
    """Every term a text may hold to match: words, identifiers whole and in parts (evidence, units)."""

    @classmethod
    def of(cls, text: str, vector: np.ndarray | None = None) -> AnalyzedQuery:
        """Analyse ``text`` once; ``vector``: its embedding (kept as float32), None for a BM25-only search."""
        terms = analyze_query(text)
        return cls(text, terms, None if vector is None else np.asarray(vector, np.float32), frozenset(terms.all))

    def bm25_terms(self, vocabulary: Container[str]) -> list[str]:
        """The terms BM25 sums for an index with this vocabulary."""
        return self.terms.resolve(vocabulary)

    @property
    def empty(self) -> bool:
        """Whether the query text is blank."""
        return not self.text.strip()
