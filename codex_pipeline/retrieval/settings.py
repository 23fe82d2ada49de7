"""Every tuned parameter of ranking and citation, in one value, with where its value came from.

:class:`RetrievalSettings` is a frozen value: :class:`~codex_pipeline.retrieval.Retriever` takes one
(``settings=``, default :data:`DEFAULT`, today's values) and hands it to the ranking
(:func:`~codex_pipeline.retrieval.ranking.rank`) and to the citation of each hit
(:func:`~codex_pipeline.retrieval.units.best_units`, :func:`~codex_pipeline.retrieval.hits.chunk_hit`).
``eval/loco.py`` scores leave-one-corpus-out candidate values made with :func:`dataclasses.replace`,
without re-materializing; nothing reads a module constant at query time.

Not here: the evidence-unit budget (:data:`~codex_pipeline.retrieval.units.UNIT_TOKENS`). It
changes what the embeddings step stores (it is part of
:data:`~codex_pipeline.retrieval.units.UNITS_VERSION`), so it is a constant of the embedding recipe,
not a query-time parameter, and it is left out of the LOCO grid: every candidate value would need
its own materialization.

Provenance vocabulary: *literature* (a published default), *dev-tuned* (chosen with
``codex eval`` on the dev gold sets that also report it: in-sample), *LOCO* (chosen by
``eval/loco.py``: the figure reported for a corpus comes from values chosen without it),
*engineering* (a cost/latency bound, not a quality choice), *rule* (not tuned: LOCO cannot choose
what only one corpus exercises).

Rules without a parameter (their alternatives were measured and deleted; figures in
``docs/history.md`` and ``eval/README.md``):

- Cited spans leave out metadata lines (turn headers, email header fields, quote placeholders;
  :mod:`~codex_pipeline.retrieval.citation`). A rule (issue 26: users never cite them); was
  ``SKIP_METADATA``.
- A unit of a merged run of one speaker's turns cites one span per turn, never the header lines
  between them (the old dev-tuned rule cited one stretch from the first sentence to the last). A
  rule (only the council set has merged turns, so LOCO cannot choose it): users cite the words
  spoken (issue 26); council IoU 4.5 -> 10.6 at the same recall. Was ``BRIDGE_TURNS``.
- Widening takes adjacent units only. LOCO (grid ``spread``): taking the best other units within
  the margin wherever they are in the chunk (several spans per hit) was never better than adjacent
  widening at the same length. Was ``WIDEN_ANYWHERE``.
- A query is lexical when it holds an identifier or a number (``ranking.lexical_weight``). LOCO
  (grid ``exact``, issue 26): these "codes" at weight 2 were chosen on 6 of 7 folds (seattle recall
  94.0 -> 96.1, hit@5 95.8 -> 97.9, huntsville-whisper 87.8 -> 89.5, the rest within 0.2);
  "names" (codes, or a capitalized word past the first) moved email and huntsville down; with the
  pdf set as an eighth fold "codes" on 7 of 8 (seattle's fold chose "none", which is
  ``lexical_query_weight`` equal to ``bm25_weight``: 98.2 -> 96.1 recall there). Was
  ``LEXICAL_CUES``.
- Hybrid fusion is a weighted sum of BM25 over its dataset's best and the cosine as it is
  (:mod:`~codex_pipeline.retrieval.ranking`). LOCO, issue 39 (grid ``fusion-final``, 11 folds incl. the 3
  independent ones): reciprocal rank fusion (``1 / (60 + rank)``, the literature default and the rule until then),
  min-max scaled cosines and a BM25 floor (a candidate under half the best BM25 score did not vote, was
  ``lexical_floor``) lost on every fold. Were ``rrf_k``, ``lexical_floor`` and the switches ``fusion``,
  ``vector_norm``, ``bm25_per_dataset`` (this one never measured alone: BM25 is always divided by its dataset's
  best in hybrid mode now).
- No flat-vector rule. LOCO grid ``exact``: counting vector scores as flat when the top ten lie
  within 0.05 cosine (and weighting BM25 as for a lexical query) changed no question of the 383, so
  the rule stayed off. Was ``FLAT_SPREAD``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetrievalSettings:
    """The parameters of ranking (fusion) and citation (evidence units, context) a search uses."""

    # -- ranking (ranking.py) -----------------------------------------------------------------

    candidates_min: int = 50
    """See :attr:`candidates_per_k`."""

    candidates_per_k: int = 5
    """Hybrid mode fuses the top ``max(k * candidates_per_k, candidates_min)`` of each ranking. Engineering: deep
    enough that a chunk ranked low by one list still gets the other's vote; not tuned."""

    bm25_weight: float = 1.0
    """Weight of a row's BM25 score over its dataset's best for the query, in hybrid fusion, for an ordinary query.
    The scale the other weights are relative to (1.0: fixed)."""

    vector_weight: float = 3.0
    """Weight of a row's cosine with the query in hybrid fusion. LOCO, issue 39 (11 folds, the 3 independent ones
    included; recall objective; one index per set): grid ``fusion-final`` (reciprocal ranks or this sum; cosine
    min-max scaled or as it is; weights 0.5 / 0.75 / 1 / 2; BM25 floor 0 / 0.3) chose this sum, the cosine as it
    is and no floor on all 11 folds, weight 2 (the grid's edge; pooled recall / IoU / hit@5 89.1 / 7.5 / 92.5 ->
    89.8 / 7.7 / 93.0 against reciprocal ranks with the same citation). With :attr:`coverage_boost` (grid
    ``coverage``: 2 / 3 x boosts 0 / 0.5 / 1 / 2 / 4): 3 with boost 2 on 10 of 11 folds; grid ``coverage-edge``
    (3 / 4 x 1.5 / 2 / 3): 3 on every fold."""

    coverage_boost: float = 2.0
    """Query-adaptive fusion: the BM25 weight for a query is multiplied by ``1 + coverage_boost x c``, ``c`` the
    IDF-weighted share of the query's words the best BM25 candidate holds (a question asked in the text's own
    words trusts BM25 more; a paraphrase leans on the vector). LOCO, issue 39, grid ``coverage`` (0 / 0.5 / 1 / 2 / 4
    x vector weights 2 / 3): 2 with vector weight 3 on 10 of 11 folds (uv's chose 0.5); LOCO pooled recall / IoU /
    hit@5 89.6 / 7.6 / 92.8 against 89.7 / 7.6 / 92.8 without it, and hybrid recall at least BM25's alone on every
    fold (without it, council 92.3 vs 92.8 and email 90.3 vs 91.8 were below). Grid ``coverage-edge`` (1.5 / 2 / 3):
    1.5 on 9 folds, 2 on 2; LOCO pooled 89.8 / 7.6 / 93.2, but with 1.5 email is below BM25 again (90.3)."""

    lexical_query_weight: float = 2.0
    """The BM25 weight for a lexical query (one holding an identifier or a number; 1.0: no special case). Issue 39
    (grid ``fusion-weight``, with the fusion above): 2 on 9 of 11 folds (1 on ind-email's, 4 on seattle's). LOCO
    (grid ``exact``, issue 26): 2 chosen on 6 of 7 folds (seattle recall 94.0 -> 96.1, hit@5 95.8 -> 97.9,
    huntsville-whisper 87.8 -> 89.5, the rest within 0.2). With the pdf set as an eighth fold: on 7 of 8 (seattle's
    fold chose no special case: 98.2 -> 96.1 recall there), weights 2 and 4 alike on every set (within 0.1 IoU),
    so the value stays."""

    phrase_min_terms: int = 6
    """A query of this many words or more (stopwords aside) that a row holds word for word, in order, ranks that
    row first (:func:`~codex_pipeline.retrieval.ranking.rank`); a quoted part ("…") of two words or more does at any
    length. A rule (issue 45: a pasted ten-word phrase found its own chunk first in 77% of bench queries, the rest lost
    to rows with more of its rarer words): six words side by side are a quotation, not a question."""

    # -- citation (units.py) ------------------------------------------------------------------

    cite_window: int = 5
    """Citations are chosen in the context of the top ``cite_window`` hits whatever ``k`` asks for: the words'
    weights (:func:`~codex_pipeline.retrieval.units.lexical_shares`) and the best unit of all come from these hits
    only (hits below are scored against them), so a hit cites the same span for ``-k 1`` and ``-k 50`` (issue 44:
    the top hit for "water main" cited ``[0:858]`` with ``-k 1`` and ``[0:1158]`` with ``-k 5``). A rule: 5, the
    ``k`` every figure in ``eval/`` was measured at, so those figures are unchanged."""

    unit_vector_weight: float = 0.0
    """The weight of a unit's cosine with the query in its score (0: units are told apart by the query's words
    alone, in every mode, and no unit is embedded at query time). LOCO, issue 39 (11 folds, objective iou@90): grid
    ``passage-margin`` (0 / 0.25 / 0.5 x neighbour margins 0.1 / 0.2 / 0.3 x 1 / 2 units) chose 0 with the margin
    and units below on 10 of 11 folds (ind-email's chose 0.5); pooled over the folds recall / IoU / hit@5
    86.0 / 8.5 / 91.5 -> 88.3 / 7.5 / 92.0, the cited passage keeping 93.6% of the whole chunk's recall (91.2%). On
    text nobody here wrote the cosine picked the wrong passage inside the right chunk: ind-council 67.5 -> 75.1,
    ind-email 64.3 -> 76.6 in-sample. Was 1.0 (the cosine plus the words, dev-tuned)."""

    lexical_weight: float = 0.5
    """A unit's score is its weighted cosine (:attr:`unit_vector_weight`) plus this times its IDF-weighted share of
    the query's words (with no cosine, it sets the scale the margins below are measured on). Dev-tuned
    (weights over a wide range scored alike on the first dev pool); LOCO (grids ``citation``, ``final``): 0.5 chosen
    on 6 of 7 folds against 0.25 and 1.0; on all 8 with the pdf set (grid ``citation``)."""

    neighbour_ranks: int = 3
    """The top hits whose evidence may widen to neighbour units (the hits below cite a sentence:
    :attr:`tail_sentences`). LOCO (grid ``sentences``, one index per set): 2 on every fold; 5 keeps more recall at a
    third less IoU. With the tail rule, pooled-index LOCO (``eval/loco.py --pooled --grid tail``, the sets sharing an
    index as the held-out pools do): 3 on 7 of 8 folds (in a shared index a third hit holds the answer more often:
    uv's cited recall 84.0 at 2). Session 7, with :attr:`widen_top_margin` (grid ``widen-top``): 3 again on 7 of 8
    pooled folds."""

    neighbour_margin: float = 0.3
    """... each neighbour joining when it scores within this of the best unit. Was 0.2 (dev-tuned on the first dev
    pool); LOCO (grid ``sentences``): 0.3 on every fold. Session 7, with :attr:`widen_top_margin` (pooled-index grid
    ``widen-joint``: 0.2 / 0.3 / 0.4 x 1 / 2 / 3 units): 0.3 and 2 units on all 8 folds."""

    widen_units: int = 2
    """How many units a top hit's evidence may grow by around its best unit, one adjacent unit at a time, each
    within :attr:`neighbour_margin` of the best (1: the better neighbour, the old dev-tuned rule). LOCO (grid
    ``sentences``): 2 on every fold."""

    widen_top_margin: float = 0.05
    """Of the :attr:`neighbour_ranks` top hits, those below the first widen only when their best unit scores within
    this of the best unit of all hits with several units (``inf``: always, the rule before session 7); the first hit
    that has its document's text always may. A second or third hit that is no match for the best evidence rarely
    holds the answer past its best unit, yet widening it cited up to three units: the largest share of what a top-5
    answer cited. LOCO (grid ``widen-top``: 0 / 0.05 / 0.1 / 0.2 / 0.3 / inf x ranks 2 / 3 / 4), session 7: sets
    sharing an index as the held-out pools do (``--pooled``), 0.05 with ranks 3 on 7 of 8 folds (the
    huntsville-whisper fold chose 0: 88.5% of its chunk recall kept); over the folds, recall / IoU / hit@5
    91.7 / 6.9 / 93.8 -> 90.2 / 8.2 / 92.4. One index per set: 0.05 with ranks 2 on all 8 folds, every fold keeping
    >= 90% (session 6's LOCO 91.3 / 8.5 / 93.8 -> 90.3 / 9.6 / 92.9). Held-out PDFs and Hatch docs (never tuned on):
    recall and hit@5 unchanged, IoU 5.4 -> 6.1 (the reader before session 7's running-header rule) and 3.8 -> 5.7.
    eval/README.md "Session 7"."""

    sentence_reach: int = 200
    """A cited stretch grows to whole sentences within this many characters on each side (0: never; units end at
    line breaks, and a caption line is not a sentence). LOCO (grid ``sentences``): 200 on 6 of 7 folds, 7 of 8 with
    the pdf set (0 on the huntsville fold, where 200 and 400 score best in-sample: captions gain 3-5 recall
    points)."""

    tail_sentences: int = 1
    """Hits ranked below :attr:`neighbour_ranks` cite only this many consecutive sentences of their best unit, the
    best-scoring run (0: the whole unit), unless their best unit scores within :attr:`tail_margin` of the best unit
    of all hits; :attr:`sentence_reach` then grows the sentence whole. A lower hit rarely holds the answer yet cited
    a whole unit: a third of what a top-5 answer cited. Only chunks of several units are cut (a one-unit chunk has
    no unit score to compare and is short already). LOCO (grid ``tail``: 0/1/2 sentences x margins 0-0.2 x ranks
    2/3), session 6: one index per set, 1 / 0.0 / ranks 2 on all 8 folds (pooled over the folds, recall / IoU /
    hit@5 91.7 / 6.4 / 94.2 -> 91.3 / 8.5 / 93.8); sets sharing an index as the held-out pools do (``--pooled``),
    1 / 0.0 / ranks 3 on 7 of 8 folds, adopted: 91.6 / 6.1 / 93.5 -> 91.7 / 6.9 / 93.8 (eval/README.md). Sentences
    are chosen by the query's words (:func:`~codex_pipeline.retrieval.units.lexical_shares`), not by cosine: a query
    embeds only itself (cosine of query-time sentence vectors scored no better)."""

    tail_margin: float = 0.0
    """See :attr:`tail_sentences` (0.0: only the hit holding the best unit of all cites it whole wherever it
    ranks; without that exception, huntsville 85.8 -> 83.4 recall). LOCO grid ``tail``: 0.0 on all 8 folds with one
    index per set, on 7 of 8 with pooled indexes (the huntsville fold: 0.05)."""

    # -- context (context.py) -----------------------------------------------------------------

    context_tokens_per_side: int = 128
    """Context budget on each side of a hit (cl100k tokens). Engineering: ten hits under 4,000 context tokens;
    context is not scored by ``codex eval``, so not tuned."""


DEFAULT = RetrievalSettings()
"""Today's values: what every search uses unless it is handed another :class:`RetrievalSettings`."""
