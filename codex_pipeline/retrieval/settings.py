"""Every tuned constant of ranking and citation, in one place, with where its value came from.

Read at call time (``settings.NAME``, never bound into a default argument), so
``eval/loco.py`` can set candidate values and score leave-one-corpus-out without
re-materializing. A constant marked *re-embeds* changes what the embeddings step
stores (:data:`~codex_pipeline.retrieval.units.UNITS_VERSION`) and is left out of the
LOCO grid: every candidate value would need its own materialization.

Provenance vocabulary: *literature* (a published default), *dev-tuned* (chosen with
``codex eval`` on the dev gold sets that also report it: in-sample), *LOCO* (chosen by
``eval/loco.py``: the figure reported for a corpus comes from values chosen without it),
*engineering* (a cost/latency bound, not a quality choice).
"""

from __future__ import annotations

# -- ranking (ranking.py) -------------------------------------------------------------------

RRF_K = 60
"""Reciprocal rank fusion constant, ``1 / (RRF_K + rank)``. Literature: Cormack, Clarke & Büttcher 2009;
the LanceDB/Haystack default. Not tuned."""

CANDIDATES_MIN = 50
CANDIDATES_PER_K = 5
"""Hybrid mode fuses the top ``max(k * CANDIDATES_PER_K, CANDIDATES_MIN)`` of each ranking. Engineering: deep
enough that a chunk ranked low by one list still gets the other's vote; not tuned."""

LEXICAL_FLOOR = 0.5
"""In hybrid mode a BM25 candidate votes only if it scores at least this share of the best BM25 score.
Dev-tuned on the sample permits and OSHA cases (a permit-number query: chunks sharing only ``bp2026`` must not
vote); LOCO grid: eval/loco.py."""

BM25_WEIGHT = 1.0
VECTOR_WEIGHT = 1.0
"""Weights of the BM25 and vector reciprocal ranks in hybrid fusion for an ordinary query. Literature default
(plain RRF, equal weights); 1.5 and 2.0 compared in eval/loco.py (grid ``fusion``)."""

LEXICAL_CUES = "codes"
"""Which queries count as lexical (``ranking.lexical_weight``): "none", "codes" (an identifier or a number),
"names" (codes, or a capitalized word past the first). LOCO (grid ``exact``, issue 26): "codes" at weight 2 was
chosen on 6 of 7 folds (seattle recall 94.0 -> 96.1, hit@5 95.8 -> 97.9, huntsville-whisper 87.8 -> 89.5, the
rest within 0.2); "names" moved email and huntsville down. With the pdf set as an eighth fold: "codes" on 7 of 8
(seattle's fold chose "none": 98.2 -> 96.1 recall there), weights 2 and 4 and spreads 0 and 0.05 alike on every
set (within 0.1 IoU), so the values stay."""

LEXICAL_QUERY_WEIGHT = 2.0
"""The BM25 weight for a lexical query or flat vector scores (1.0: no special case). LOCO (grid ``exact``)."""

FLAT_SPREAD = 0.0
"""Vector scores are flat when the top ten lie within this cosine spread (0.0: never). LOCO grid ``exact``: 0.05
changed no question of the 383, so the rule stays off."""

# -- citation (units.py, context.py) --------------------------------------------------------

UNIT_TOKENS = 128
"""Evidence unit budget in cl100k tokens (consecutive sentences, never cut). Dev-tuned on the first dev pool
(council + httpx + email); re-embeds, so not in the LOCO grid."""

LEXICAL_WEIGHT = 0.5
"""A unit's score is its cosine plus this times its IDF-weighted share of the query's words. Dev-tuned
(weights over a wide range scored alike on the first dev pool); LOCO (grids ``citation``, ``final``): 0.5 chosen
on 6 of 7 folds against 0.25 and 1.0; on all 8 with the pdf set (grid ``citation``)."""

NEIGHBOUR_RANKS = 3
"""The top hits whose evidence may widen to neighbour units (the hits below cite a sentence: :data:`TAIL_SENTENCES`).
LOCO (grid ``sentences``, one index per set): 2 on every fold; 5 keeps more recall at a third less IoU. With the
tail rule, pooled-index LOCO (``eval/loco.py --pooled --grid tail``, the sets sharing an index as the held-out pools
do): 3 on 7 of 8 folds (in a shared index a third hit holds the answer more often: uv's cited recall 84.0 at 2).
Session 7, with :data:`WIDEN_TOP_MARGIN` (grid ``widen-top``): 3 again on 7 of 8 pooled folds."""

NEIGHBOUR_MARGIN = 0.3
"""... each neighbour joining when it scores within this of the best unit. Was 0.2 (dev-tuned on the first dev
pool); LOCO (grid ``sentences``): 0.3 on every fold. Session 7, with :data:`WIDEN_TOP_MARGIN` (pooled-index grid
``widen-joint``: 0.2 / 0.3 / 0.4 x 1 / 2 / 3 units): 0.3 and 2 units on all 8 folds."""

WIDEN_UNITS = 2
"""How many units a top hit's evidence may grow by around its best unit, one adjacent unit at a time, each
within :data:`NEIGHBOUR_MARGIN` of the best (1: the better neighbour, the old dev-tuned rule). LOCO (grid
``sentences``): 2 on every fold."""

WIDEN_TOP_MARGIN = 0.05
"""Of the :data:`NEIGHBOUR_RANKS` top hits, those below the first widen only when their best unit scores within this
of the best unit of all hits with several units (``inf``: always, the rule before session 7); the first hit that has
its document's text always may. A second or third hit that is no match for the best evidence rarely holds the
answer past its best unit, yet widening it cited up to three units: the largest share of what a top-5 answer cited. LOCO (grid ``widen-top``: 0 / 0.05 / 0.1 / 0.2 /
0.3 / inf x ranks 2 / 3 / 4), session 7: sets sharing an index as the held-out pools do (``--pooled``), 0.05 with
ranks 3 on 7 of 8 folds (the huntsville-whisper fold chose 0: 88.5% of its chunk recall kept); over the folds,
recall / IoU / hit@5 91.7 / 6.9 / 93.8 -> 90.2 / 8.2 / 92.4. One index per set: 0.05 with ranks 2 on all 8 folds,
every fold keeping >= 90% (session 6's LOCO 91.3 / 8.5 / 93.8 -> 90.3 / 9.6 / 92.9). Held-out PDFs and Hatch docs (never
tuned on): recall and hit@5 unchanged, IoU 5.4 -> 6.1 (the reader before session 7's running-header rule) and
3.8 -> 5.7. eval/README.md "Session 7"."""

WIDEN_ANYWHERE = False
"""Widening takes the best other units within the margin wherever they are in the chunk (several spans per hit),
not only adjacent ones. LOCO (grid ``spread``): never better than adjacent widening at the same length, off."""

SENTENCE_REACH = 200
"""A cited stretch grows to whole sentences within this many characters on each side (0: never; units end at
line breaks, and a caption line is not a sentence). LOCO (grid ``sentences``): 200 on 6 of 7 folds, 7 of 8 with the pdf set (0 on the
huntsville fold, where 200 and 400 score best in-sample: captions gain 3-5 recall points)."""

TAIL_SENTENCES = 1
"""Hits ranked below :data:`NEIGHBOUR_RANKS` cite only this many consecutive sentences of their best unit, the
best-scoring run (0: the whole unit), unless their best unit scores within :data:`TAIL_MARGIN` of the best unit
of all hits; :data:`SENTENCE_REACH` then grows the sentence whole. A lower hit rarely holds the answer yet cited
a whole unit: a third of what a top-5 answer cited. Only chunks of several units are cut (a one-unit chunk has
no unit score to compare and is short already). LOCO (grid ``tail``: 0/1/2 sentences x margins 0-0.2 x ranks
2/3), session 6: one index per set, 1 / 0.0 / ranks 2 on all 8 folds (pooled over the folds, recall / IoU / hit@5
91.7 / 6.4 / 94.2 -> 91.3 / 8.5 / 93.8); sets sharing an index as the held-out pools do (``--pooled``), 1 / 0.0 /
ranks 3 on 7 of 8 folds, adopted: 91.6 / 6.1 / 93.5 -> 91.7 / 6.9 / 93.8 (eval/README.md). Sentences are chosen
by the query's words (:func:`~codex_pipeline.retrieval.units.lexical_shares`), not by cosine: a query embeds only
itself (cosine of query-time sentence vectors scored no better)."""

TAIL_MARGIN = 0.0
"""See :data:`TAIL_SENTENCES` (0.0: only the hit holding the best unit of all cites it whole wherever it
ranks; without that exception, huntsville 85.8 -> 83.4 recall). LOCO grid ``tail``: 0.0 on all 8 folds with one
index per set, on 7 of 8 with pooled indexes (the huntsville fold: 0.05)."""

BRIDGE_TURNS = False
"""A unit of a merged run of one speaker's turns cites one stretch from its first to its last sentence, header
lines between included (True: the old dev-tuned rule) or one span per turn (False). A rule, not tuned (only the
council set has merged turns, so LOCO cannot choose it): users cite the words spoken (issue 26). Council IoU
4.5 -> 10.6 at the same recall."""

SKIP_METADATA = True
"""Cited spans leave out metadata lines (turn headers, email header fields, quote placeholders; see
retrieval.citation). A rule, not tuned (issue 26: users never cite them)."""

CONTEXT_TOKENS_PER_SIDE = 128
"""Context budget on each side of a hit (cl100k tokens). Engineering: ten hits under 4,000 context tokens;
context is not scored by ``codex eval``, so not tuned."""
