"""Evidence units: a hit cites the part of its chunk that answers, not the whole chunk.

A chunk is cut into *units* — consecutive sentences of its spans packed up to
:data:`UNIT_TOKENS` cl100k tokens (a sentence is never cut; a chunk within the
budget is one unit) — each a tuple of exact spans of the canonical text. A unit is
embedded as its sentences' text with its context prefix (see :func:`chunk_units`,
:func:`context_prefix`; never the markup between them) and scored by cosine with the
query (none in BM25 search, which embeds nothing) plus ``lexical_weight`` times the
IDF-weighted share of the query's words it holds (:func:`lexical_shares`); the hit's ``evidence`` is its best unit's spans (for
the top hits, widened by adjacent units that score almost as well; for the lower ones, the
sentence of it holding most of the query's words; grown to whole sentences; metadata lines
never cited, see :mod:`~codex_pipeline.retrieval.citation`);
``spans``, the parent and the context stay the chunk's. The ranking itself is the
chunk ranking, unchanged (a re-ranking by unit score moved exact permit-number
matches down).

**Vectors are made once, at embedding time.** The embeddings step embeds the units of
every chunk with more than one unit (``codex.<dataset>_evidence_units``, reused by
exact text like chunk vectors; the chunk's own vector is their mean, see
``pipeline/embeddings_day.py``) and the search index keeps them beside the chunk vectors,
so a query embeds only itself. A chunk of one unit needs no unit vector: its
evidence is its own spans. A unit whose stored vector is missing or was made from
another text (a recipe change not yet re-embedded) is embedded at query time, cached
per process by text. Why: embedding the candidates' units per query would cost many
times the latency budget. :data:`UNITS_VERSION` names the recipe; a change to it makes
the version sensor re-run the embeddings step.

Why 128 tokens: chosen with ``codex eval`` on the dev gold sets in ``eval/``: smaller
units lose recall on multi-sentence answers, larger ones lose precision.

Why the lexical term and unmarked text: units of one chunk are often a few hundredths
of cosine apart, and a unit embedded with markup (a merged run of turns with its
``Start:/End:/Duration:`` header lines) drifts from what it says, so a neighbour can
beat the unit naming what the question names. The lexical term breaks those near-ties
toward the unit holding the query's words; ``lexical_weight`` was chosen with
``codex eval`` (weights over a wide range scored alike). The figures behind these
choices are in ``docs/history.md``; the tuned parameters of citation are fields of
:class:`~codex_pipeline.retrieval.settings.RetrievalSettings`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from codex_pipeline.core.tokens import count_tokens_batch
from codex_pipeline.retrieval.citation import citable, only_metadata
from codex_pipeline.retrieval.lexical import analyze, sentence_bounds
from codex_pipeline.retrieval.query import AnalyzedQuery
from codex_pipeline.retrieval.settings import DEFAULT, RetrievalSettings
from codex_pipeline.retrieval.types import Span

UNIT_TOKENS = 128
"""Evidence unit budget in cl100k tokens (consecutive sentences, never cut). Dev-tuned on the first dev pool
(council + httpx + email); re-embeds (it is part of :data:`UNITS_VERSION`), so it is not a query-time
:class:`~codex_pipeline.retrieval.settings.RetrievalSettings` field and not in the LOCO grid."""
CACHE_SIZE = 50_000
UNITS_VERSION = f"units{UNIT_TOKENS};sentences=1;prefix=2;join=space;chunk=len-weighted-mean;single=prefixed"
"""The unit recipe (budget, sentence rule, context prefix, joining, how a chunk's vector pools its
units'): stamped on every embeddings file, so changing any of them makes the version sensor re-embed."""

Unit = tuple[Span, ...]


def unit_pieces(text: str, spans: Sequence[Span], budget: int = UNIT_TOKENS) -> list[list[Span]]:
    """The sentences of ``spans`` packed into units of at most ``budget`` tokens (a sentence is never cut).

    Each unit is its list of sentence spans: what is embedded is their text (joined by a
    space), never the markup between them; :func:`cite` turns a unit into the spans a
    hit reports.
    """
    pieces: list[Span] = []
    for s, e in spans:
        pieces += [(s + a, s + b) for a, b in sentence_bounds(text[s:e])] or [(s, e)]
    if not pieces:
        return []
    sizes = count_tokens_batch([text[s:e] for s, e in pieces])
    if sum(sizes) <= budget:
        return [pieces]
    units: list[list[Span]] = []
    used = budget + 1
    for piece, n in zip(pieces, sizes):
        if used + n > budget:
            units.append([])
            used = 0
        units[-1].append(piece)
        used += n
    return units


@dataclass(frozen=True)
class ChunkUnits:
    """A chunk's units: each unit's sentence spans and the text embedded for it."""

    pieces: list[list[Span]]
    texts: list[str]
    prefix: str = ""  # the context prefix each text starts with

    @property
    def embedded(self) -> bool:
        """Whether the units get vectors of their own (a chunk of one unit is cited whole)."""
        return len(self.pieces) > 1

    @property
    def stored(self) -> bool:
        """Whether the embeddings step stores the units: several, or one whose text carries a context prefix."""
        return self.embedded or bool(self.texts and self.prefix)


def chunk_units(text: str, spans: Sequence[Span], metadata: str | dict[str, Any] | None) -> ChunkUnits:
    """The units of a chunk of ``text`` (its canonical text) and what is embedded for each.

    The one recipe both the embeddings step (stored vectors) and a query (the
    fallback) use, so a stored vector is found again by its text's hash.
    """
    pieces = unit_pieces(text, spans)
    prefix = context_prefix(metadata)
    return ChunkUnits(pieces, [prefix + " ".join(text[s:e] for s, e in u) for u in pieces], prefix)


def unit_key(text: str) -> int:
    """64-bit key of a unit's embedded text: the first 16 hex digits of its ``input_hash`` (SHA-256)."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def cite(text: str, pieces: Sequence[Span]) -> Unit:
    """The spans a unit is cited by: adjacent pieces separated by whitespace only joined.

    A gap holding anything else stays a gap: a merged run of one speaker's turns cites
    one span per turn, never the next turn's ``Name:/Start:/End:/Duration:/Text:`` header
    between them (issue 26; see :mod:`~codex_pipeline.retrieval.settings`).
    """
    return _join(list(pieces), text)


def split_units(text: str, spans: Sequence[Span], budget: int = UNIT_TOKENS) -> list[Unit]:
    """Consecutive sentences of ``spans`` packed into units of at most ``budget`` tokens, as cited (see :func:`cite`).

    A chunk within the budget is one unit citing its own spans.
    """
    units = unit_pieces(text, spans, budget)
    if len(units) == 1:
        return [_join(list(spans), text)]
    return [cite(text, u) for u in units]


def _join(pieces: list[Span], text: str) -> Unit:
    """Adjacent pieces separated by whitespace only become one span."""
    out: list[Span] = [pieces[0]]
    for s, e in pieces[1:]:
        if not text[out[-1][1] : s].strip():
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return tuple(out)


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
    if meta.get("subject"):  # an email thread's window
        return f"{meta['subject']}\n"
    return ""


class UnitVectors:
    """Unit embeddings cached by exact text (a process serving queries embeds each unit once)."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray], size: int = CACHE_SIZE) -> None:
        self.embed = embed
        self.size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def vectors(self, texts: list[str]) -> np.ndarray:
        """Float32 vectors of ``texts``, in order, embedding only those not cached; ``(0, 0)`` for none."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for t, v in zip(missing, self.embed(missing)):
                self._cache[t] = np.asarray(v, np.float32)
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        for t in texts:
            self._cache.move_to_end(t)
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)


StoredUnits = tuple[np.ndarray, np.ndarray]
"""A chunk's stored unit vectors as the index keeps them: ``(keys [n] uint64, vectors [n, d])``."""


def best_units(
    candidates: Sequence[tuple[str, Sequence[Span], str | dict[str, Any] | None]],
    query: AnalyzedQuery,
    vectors: UnitVectors,
    stored: Sequence[StoredUnits | None] | None = None,
    ranks: Sequence[int] | None = None,
    settings: RetrievalSettings = DEFAULT,
) -> list[tuple[Unit, float]]:
    """For each candidate ``(canonical text, spans, metadata)``, in rank order: its
    evidence (best unit) and that unit's score. The parameters named below are fields of ``settings``.

    A unit's score is its cosine with the query (0 without a query vector: BM25 search) plus ``lexical_weight`` times its
    :func:`lexical_shares` (the query's words it holds, weighted by their rarity among
    the candidates' units): the same two signals the chunk ranking fuses. By cosine
    alone the units of one chunk differ by a few hundredths, and the unit naming the
    foundation, the bill or the street the question names often lost to a neighbour.
    ``stored[i]``: candidate ``i``'s unit vectors from the index, used when their keys
    are those of the units' texts; other units of chunks with several are embedded
    through ``vectors``; a chunk of one unit is never embedded (its one unit wins).

    ``ranks[i]``: candidate ``i``'s rank among the hits (default: its position). The first ``neighbour_ranks``
    candidates (past the first, only those whose best unit is within ``widen_top_margin`` of the
    best unit of all) also cite adjacent units, one at a time up to
    ``widen_units``, while the better neighbour scores within
    ``neighbour_margin`` of the best (values chosen leave-one-corpus-out,
    ``eval/loco.py``; the figures below are the first, in-sample choice of one neighbour): an answer that
    crosses a unit boundary (a sentence, then the one that completes it) is cut in half
    otherwise, and the top hits are where the answer usually is. Pooled dev sets (153
    questions, top-5 hybrid; recall / IoU): single units 79.1 / 7.78; neighbours for the top
    2 within 0.1 / 0.15 / 0.2: 85.2 / 7.79, 86.4 / 7.60, 87.7 / 7.61; for every hit within
    0.1: 85.9 / 6.83 (lower hits' neighbours add characters, rarely answers); for the top 2
    always: 89.4 / 6.74 (the margin keeps an off-topic neighbour out).

    Tried and not kept: making each hit cite its best unit that overlaps nothing a
    higher hit cites. Email recall +0.8, docs unchanged, council recall -3.2 (an agenda
    item ranked above its turn pushed the turn to a worse unit).
    """
    lexical_weight, neighbour_ranks = settings.lexical_weight, settings.neighbour_ranks
    units = [chunk_units(text, spans, meta) for text, spans, meta in candidates]
    bodies = [" ".join(text[s:e] for s, e in u) for (text, _, _), cu in zip(candidates, units) for u in cu.pieces]
    sims = np.zeros(len(bodies))
    if query.vector is not None and settings.unit_vector_weight:  # else units are told apart by the query's words alone
        _add_cosines(sims, units, query.vector, vectors, stored)
        sims *= settings.unit_vector_weight
    ends = np.cumsum([len(cu.pieces) for cu in units])
    window = min(settings.cite_window, len(units))  # the hits that set word weights and the best unit of all
    if not query.empty and lexical_weight and bodies:
        basis = int(ends[window - 1]) if window else len(bodies)
        sims = sims + lexical_weight * np.asarray(lexical_shares(query, bodies, basis))
    _sink_metadata_units(sims, candidates, units)
    out: list[tuple[Unit, float]] = []
    parts = [sims[end - len(cu.pieces) : end] for cu, end in zip(units, ends)]
    bests = [float(part.max()) if cu.embedded and len(part) and i < window else None
             for i, (cu, part) in enumerate(zip(units, parts))]
    top = max((b for b in bests if b is not None), default=0.0)  # the best scored unit of any hit (see tail_margin)
    owner = bests.index(top) if top in bests else -1  # a tie (BM25 scores by shares alone) goes to the higher hit
    for index, ((text, spans, _), cu) in enumerate(zip(candidates, units)):
        rank = ranks[index] if ranks is not None else index
        if not cu.pieces:
            out.append(((), -1.0))
            continue
        part = parts[index]
        i = int(np.argmax(part))
        widens = rank < neighbour_ranks and (index == 0 or part[i] >= top - settings.widen_top_margin)
        chosen = _widen(part, i, settings.neighbour_margin, settings.widen_units if widens else 0)
        kept = citable(text, [p for j in chosen for p in cu.pieces[j]])  # metadata lines are never cited
        whole = index == owner or part[i] > top - settings.tail_margin  # holds the best unit of all, or nearly
        tail = settings.tail_sentences
        if rank >= neighbour_ranks and cu.embedded and tail and len(kept) > tail and not whole:
            kept = _best_sentences(text, kept, query, tail)
        if settings.sentence_reach and cu.embedded:
            kept = complete_sentences(text, kept, spans, settings.sentence_reach)
        out.append((cite(text, kept), float(part[i])))
    return out


METADATA_UNIT_SCORE = -1.0
"""The score of a unit made only of metadata lines (a reply's quoted copy, a header block) in a chunk that has
other units: below any unit of words (cosine and shares are >= -1 + 0), so it is never the evidence then."""


def _sink_metadata_units(sims: np.ndarray, candidates: Sequence[tuple[str, Sequence[Span], Any]],
                         units: Sequence[ChunkUnits]) -> None:
    """Units of only metadata lines score :data:`METADATA_UNIT_SCORE` in chunks with other units: the quoted
    question in a reply matches the question's words best, yet the reply's own words are what answers."""
    at = 0
    for (text, _, _), cu in zip(candidates, units):
        n = len(cu.pieces)
        meta = [only_metadata(text, pieces) for pieces in cu.pieces]
        if n > 1 and not all(meta):
            for j, m in enumerate(meta):
                if m:
                    sims[at + j] = METADATA_UNIT_SCORE
        at += n


_SENTENCE_STOP = re.compile(r"[.!?][\"')\]]*(?=\s|$)")


def complete_sentences(text: str, pieces: Sequence[Span], spans: Sequence[Span], reach: int) -> list[Span]:
    """``pieces`` grown to whole sentences: back to the end of the sentence before the first piece and on to the
    end of the one the last piece is in, each within ``reach`` characters and the chunk's ``spans``.

    A unit boundary falls between *lines*, and in a caption file or a hard-wrapped message a line is not a
    sentence: the answer's sentence starts on the unit before or ends on the one after. The grown stretch is
    cut into its lines and metadata lines are left out again (:func:`~codex_pipeline.retrieval.citation.citable`).
    """
    if not pieces:
        return list(pieces)
    first, last = pieces[0][0], pieces[-1][1]
    lo = next((a for a, b in spans if a <= first <= b), first)
    hi = next((b for a, b in spans if a <= last <= b), last)
    before = text[max(lo, first - reach) : first]
    stops = list(_SENTENCE_STOP.finditer(before))
    start = first - len(before) + stops[-1].end() if stops else (lo if first - lo <= reach else first)
    after = _SENTENCE_STOP.search(text, last - 1 if last > 0 else 0, min(hi, last + reach))
    end = after.end() if after and after.end() > last else last
    grown = [(start + a, start + b) for a, b in sentence_bounds(text[start:first])]
    grown += list(pieces) + [(last + a, last + b) for a, b in sentence_bounds(text[last:end])]
    return citable(text, grown)


def _best_sentences(text: str, pieces: list[Span], query: AnalyzedQuery, n: int) -> list[Span]:
    """The ``n`` consecutive sentence pieces of a lower hit's unit holding most of the query's words
    (:func:`lexical_shares`; the first ones when none holds any: citing the whole unit then scored lower
    IoU at the same recall in pooled-index LOCO, docs/history.md).

    A hit below the top ones rarely holds the answer, yet it cited a whole unit: a third of what a
    top-5 answer cites. Lexical, not cosine: a query embeds only itself (see the module docstring).
    """
    if query.empty:
        return pieces[:n]
    scores = np.asarray(lexical_shares(query, [text[s:e] for s, e in pieces]))
    at = int(np.argmax(np.convolve(scores, np.ones(n), "valid")))
    return pieces[at : at + n]


def _widen(scores: np.ndarray, best: int, margin: float, steps: int) -> list[int]:
    """The contiguous run of units around ``best``: up to ``steps`` times, the better adjacent unit joins while it
    scores within ``margin`` of the best (``steps`` 1: the one-neighbour rule)."""
    lo = hi = best
    for _ in range(steps):
        near = [j for j in (lo - 1, hi + 1) if 0 <= j < len(scores) and scores[j] >= scores[best] - margin]
        if not near:
            break
        j = max(near, key=lambda j: scores[j])
        lo, hi = min(lo, j), max(hi, j)
    return list(range(lo, hi + 1))


def _add_cosines(sims: np.ndarray, units: Sequence[ChunkUnits], vector: np.ndarray, vectors: UnitVectors,
                 stored: Sequence[StoredUnits | None] | None) -> None:
    """Each embedded unit's cosine with the query into ``sims``: stored vectors whose keys match the units' texts,
    the others embedded through ``vectors``."""
    q = vector / (np.linalg.norm(vector) or 1.0)
    need: list[int] = []
    need_texts: list[str] = []
    at = 0
    for i, cu in enumerate(units):
        n = len(cu.texts)
        if cu.embedded:
            got = stored[i] if stored is not None else None
            if got is not None and len(got[0]) == n and [int(k) for k in got[0]] == [unit_key(t) for t in cu.texts]:
                sims[at : at + n] = _cosines(np.asarray(got[1], np.float32), q)
            else:
                need += range(at, at + n)
                need_texts += cu.texts
        at += n
    if need_texts:
        sims[need] = _cosines(vectors.vectors(need_texts), q)


def _cosines(vecs: np.ndarray, unit_query: np.ndarray) -> np.ndarray:
    return vecs @ unit_query / np.maximum(np.linalg.norm(vecs, axis=1), 1e-12)


def lexical_shares(query: AnalyzedQuery | str, texts: Sequence[str], basis: int | None = None) -> list[float]:
    """Per text: the share of the query's terms it holds, each term weighted by its IDF among the first ``basis``
    texts (default all; a term none of them holds weighs as one all of them hold).

    ``log(1 + N / df)``: a word every candidate unit holds (the meeting's topic, the
    list's name) counts little, a word only one unit holds counts most. 0.0 when the
    query has no term any text holds.
    """
    wanted = (query if isinstance(query, AnalyzedQuery) else AnalyzedQuery.of(query)).matched
    if not wanted:
        return [0.0] * len(texts)
    held = [wanted & set(analyze(t)) for t in texts]
    among = held if basis is None else held[:basis]
    df = Counter(t for h in among for t in h)
    # a term no unit of the basis holds still counts, as a term every unit holds would
    idf = {t: math.log(1.0 + len(among) / df[t]) if t in df else math.log(2.0) for t in wanted}
    total = sum(idf.values())
    return [sum(idf[t] for t in h) / total if total else 0.0 for h in held]
