"""Evidence units: a hit cites the part of its chunk that answers, not the whole chunk.

A chunk is cut into *units* — consecutive sentences of its spans packed up to
:data:`UNIT_TOKENS` cl100k tokens (a sentence is never cut; a chunk within the
budget is one unit) — each a tuple of exact spans of the canonical text. At query
time each of the top-k hits' units is embedded with the query embedder (with its
context prefix, see :func:`context_prefix`) and scored by cosine with the query; the
hit's ``evidence`` is its best unit's spans; ``spans``, the parent and the context stay
the chunk's. The ranking itself is the chunk ranking, unchanged (:func:`fuse`, a
re-ranking by unit score, moved exact permit-number matches down and is not used).

Why at query time: units of every chunk would need vectors stored beside the chunk
vectors (an embeddings-table change); here only the candidates' units are embedded,
cached per process by text, about 15 candidates × a few units per query.

Why 128 tokens: measured with ``codex eval`` on the dev gold sets in ``eval/`` (see
``docs/datasets/docs.md``): smaller units lose recall on multi-sentence answers,
larger ones lose precision.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from codex_pipeline.core.tokens import count_tokens_batch
from codex_pipeline.retrieval.lexical import sentence_bounds
from codex_pipeline.retrieval.types import Span

UNIT_TOKENS = 128
UNIT_POOL = 3  # candidates re-ranked per requested hit
RRF_K = 60
CACHE_SIZE = 50_000

Unit = tuple[Span, ...]


def split_units(text: str, spans: Sequence[Span], budget: int = UNIT_TOKENS, bridge: bool = False) -> list[Unit]:
    """Consecutive sentences of ``spans`` packed into units of at most ``budget`` tokens.

    ``bridge``: the spans are consecutive stretches whose gaps hold only markup (a
    merged run of one speaker's adjacent transcript turns: the gap is that speaker's
    next ``Name:/Start:/End:/Duration:/Text:`` header), so a unit cites the one
    stretch of the file from its first to its last sentence.
    """
    pieces: list[Span] = []
    for s, e in spans:
        pieces += [(s + a, s + b) for a, b in sentence_bounds(text[s:e])] or [(s, e)]
    if not pieces:
        return []
    sizes = count_tokens_batch([text[s:e] for s, e in pieces])
    if sum(sizes) <= budget:
        return [_join(list(spans), text, bridge)]
    units: list[list[Span]] = []
    used = budget + 1
    for piece, n in zip(pieces, sizes):
        if used + n > budget:
            units.append([])
            used = 0
        units[-1].append(piece)
        used += n
    return [_join(u, text, bridge) for u in units]


def _join(pieces: list[Span], text: str, bridge: bool = False) -> Unit:
    """Adjacent pieces separated by whitespace only (any gap when ``bridge``) become one span."""
    out: list[Span] = [pieces[0]]
    for s, e in pieces[1:]:
        if bridge or not text[out[-1][1] : s].strip():
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return tuple(out)


def bridges(metadata: dict[str, Any]) -> bool:
    """Whether a chunk's spans are adjacent transcript turns of one speaker (see :func:`split_units`)."""
    turns = metadata.get("turns")
    return bool(metadata.get("merged") and isinstance(turns, list) and turns == list(range(turns[0], turns[0] + len(turns))))


def context_prefix(metadata: str | dict[str, Any] | None) -> str:
    """What a reader of the unit would know from its place: the speaker, the header path."""
    meta = json.loads(metadata) if isinstance(metadata, str) and metadata else metadata or {}
    if not isinstance(meta, dict):
        return ""
    if meta.get("speaker"):
        return f"{meta['speaker']}: "
    headers = meta.get("headers")
    if isinstance(headers, list) and headers:
        return " > ".join(str(h) for h in headers) + "\n"
    if meta.get("title"):
        return f"{meta['title']}\n"
    return ""


class UnitVectors:
    """Unit embeddings cached by exact text (a process serving queries embeds each unit once)."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], size: int = CACHE_SIZE) -> None:
        self.embed = embed
        self.size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def vectors(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for t, v in zip(missing, self.embed(missing)):
                self._cache[t] = np.asarray(v, np.float32)
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        for t in texts:
            self._cache.move_to_end(t)
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)


def best_units(
    candidates: Sequence[tuple[str, Sequence[Span], str, bool]],
    query_vector: np.ndarray,
    vectors: UnitVectors,
) -> list[tuple[Unit, float]]:
    """For each candidate ``(canonical text, spans, context prefix, bridge)``: its best unit and that unit's cosine."""
    units = [split_units(text, spans, bridge=bridge) for text, spans, _, bridge in candidates]
    texts = [prefix + " ".join(text[s:e] for s, e in u)
             for (text, _, prefix, _), us in zip(candidates, units) for u in us]
    vecs = vectors.vectors(texts)
    q = query_vector / (np.linalg.norm(query_vector) or 1.0)
    sims = vecs @ q / np.maximum(np.linalg.norm(vecs, axis=1), 1e-12) if len(texts) else np.zeros(0)
    out: list[tuple[Unit, float]] = []
    at = 0
    for us in units:
        if not us:
            out.append(((), -1.0))
            continue
        part = sims[at : at + len(us)]
        i = int(np.argmax(part))
        out.append((us[i], float(part[i])))
        at += len(us)
    return out


def fuse(order: Sequence[int], unit_scores: Sequence[float]) -> list[int]:
    """Candidate positions re-ranked by chunk rank + best-unit rank (reciprocal rank fusion)."""
    by_unit = sorted(range(len(unit_scores)), key=lambda i: (-unit_scores[i], i))
    unit_rank = {i: r for r, i in enumerate(by_unit, 1)}
    score = {i: 1.0 / (RRF_K + r) + 1.0 / (RRF_K + unit_rank[i]) for r, i in enumerate(order, 1)}
    return sorted(order, key=lambda i: (-score[i], i))
