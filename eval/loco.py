"""Leave-one-corpus-out (LOCO) scores of the tuned ranking and citation constants (issue 26 item 2).

    python eval/loco.py --work /tmp/loco [--sets council,docs,...] [--grid small] [--pooled]

Each dev set must have been materialized once into ``WORK/<set>`` by ``codex eval`` with
``--work-dir WORK/<set>`` (the commands are in ``eval/README.md``); this script then drives
``Retriever`` in-process over those indexes (no Dagster, no re-embedding) for every point of a
small grid of candidate :class:`~codex_pipeline.retrieval.settings.RetrievalSettings` values
(:func:`dataclasses.replace` of the defaults, handed to ``Retriever.with_settings``). ``--pooled``
scores the sets of each :data:`POOLS` entry over one shared index in ``WORK/pool-<name>`` instead,
as the held-out evaluation pools corpora (there a lower hit holds the answer more often than in a set's own index).

For each held-out set ``c``: the grid point maximizing the mean objective over the *other*
sets is chosen, and ``c`` is scored with it. Objective (``--objective``, default ``iou@90``): the
highest mean IoU among the grid points whose cited passages keep at least 90% of the whole
chunk's recall on every training set; ``recall+iou`` is the other choice (it always picks the
widest citation). Means over each set's questions; sets weigh equally. Printed per set: the LOCO figures (recall / precision /
IoU / hit@5), the whole-chunk recall of the same hits, the in-sample figures (the point best on
all sets) and the current defaults' figures; then the same pooled over all questions.
Constants that change what is embedded (``units.UNIT_TOKENS``) are not settings, so not in the grid.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import os
import pickle
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_pipeline.cli.query_embedder import query_embedder
from codex_pipeline.datasets.registry import DatasetRegistry
from codex_pipeline.evaluation.gold import Question, load_gold
from codex_pipeline.evaluation.metrics import Score, Summary, merge, score, summarize
from codex_pipeline.evaluation.runner import CorpusPart, hit_spans, source_maps
from codex_pipeline.retrieval import RetrievalSettings, Retriever
from codex_pipeline.retrieval.settings import DEFAULT
from codex_pipeline.settings import CodexSettings
from codex_pipeline.warehouse.storage import Warehouse

SETTINGS = CodexSettings.from_env(os.environ)  # a script: the edge of its own process

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent / "shared" / "corpora"

SETS: dict[str, list[str]] = {  # set -> its --dataset DS=SUBDIR parts (as in eval/README.md)
    "ind-council": ["civic_intelligence=council"],
    "ind-docs": ["docs=markdown"],
    "ind-email": ["email_threads=email"],
    "council": ["civic_intelligence=council"],
    "docs": ["docs=markdown/httpx"],
    "email": ["email_threads=email"],
    "uv": ["docs=markdown/uv"],
    "huntsville": ["narrative=council_captions/huntsville-al"],
    "huntsville-whisper": ["narrative=council_captions/huntsville-al"],
    "seattle": ["seattle_preapplications=permits"],
    "pdf": ["documents=pdf"],
    # issue 41: cities' own records in civic_intelligence (INCLUDE below picks the files). civic: two Rivergrove
    # minutes and two Huntsville agendas; hsv-civic / hsvw-civic: the huntsville / huntsville-whisper gold over the
    # captions / Whisper transcripts landed with their meetings' agendas (aligned to them)
    "civic": ["civic_intelligence=pdf/rivergrove-or", "civic_intelligence=pdf/huntsville-al"],
    "hsv-civic": ["civic_intelligence=council_captions/huntsville-al", "civic_intelligence=pdf/huntsville-al"],
    "hsvw-civic": ["civic_intelligence=council_captions/huntsville-al", "civic_intelligence=pdf/huntsville-al"],
}
GOLD_OF: dict[str, str] = {"hsv-civic": "huntsville", "hsvw-civic": "huntsville-whisper"}  # a set scored with another set's gold
INCLUDE: dict[str, list[str]] = {  # codex eval --include of each set when it is landed (the commands in eval/README.md)
    "huntsville": ["*.captions.txt"],
    "huntsville-whisper": ["*.whisper.txt"],
    "seattle": ["seattle_sdci_preapplications.csv"],
    "pdf": ["il_finance_authority.pdf", "SSA21_MeetingMinutes_1.29.18.pdf", "cook_emergency_telephone_schedule.pdf",
            "2026-06-11-city-council-meeting_agenda.pdf", "40_025-LAW.pdf", "13_030-DCP.pdf",
            "2019-Res-41425-Public-Records.pdf", "2011-Ord-81-2011-Sign.pdf", "federal-register-2020-17221.pdf"],
    "civic": ["2018-08-13-Minutes.pdf", "2018-12-10-Minutes.pdf", "2026-06-11-city-council-meeting_agenda.pdf",
              "2026-06-25-city-council-meeting_agenda.pdf"],
    "hsv-civic": ["*.captions.txt", "2026-06-11-*_agenda.pdf", "2026-06-25-*_agenda.pdf", "2026-07-10-*_agenda.pdf",
                  "2026-07-23-*_agenda.pdf"],  # the captions and the agendas of their four meetings
    "hsvw-civic": ["*.whisper.txt", "2026-06-11-*_agenda.pdf", "2026-06-25-*_agenda.pdf", "2026-07-10-*_agenda.pdf",
                   "2026-07-23-*_agenda.pdf"],
}

INDEPENDENT = "independent"
"""``ind-*`` sets: the corpora under ``CORPUS/independent`` whose gold (``independent/gold/<name>.gold.jsonl``, sources
relative to that folder) was written by readers who never saw Codex's output; the others are ``eval/<name>.gold.jsonl``
over ``CORPUS``."""


def gold_of(name: str, corpus: Path) -> tuple[Path, Path]:
    """Set ``name``'s gold file and the folder its sources are relative to."""
    if name.startswith("ind-"):
        root = corpus / INDEPENDENT
        return root / "gold" / f"{name.removeprefix('ind-')}.gold.jsonl", root
    return HERE / f"{GOLD_OF.get(name, name)}.gold.jsonl", corpus


POOLS: dict[str, list[str]] = {  # --pooled: these sets share one index, as the held-out protocol pools them
    "first": ["council", "docs", "email"],
    "second": ["uv", "huntsville", "seattle"],
    "independent": ["ind-council", "ind-docs", "ind-email"],
}

GRIDS: dict[str, dict[str, list[Any]]] = {  # RetrievalSettings field -> the values tried
    "none": {},
    "small": {
        "vector_weight": [1.5, 2.0],
        "lexical_weight": [0.25, 0.5, 1.0],
        "neighbour_margin": [0.1, 0.2, 0.3],
    },
    "citation": {
        "lexical_weight": [0.25, 0.5, 1.0],
        "neighbour_margin": [0.1, 0.2, 0.3],
        "neighbour_ranks": [2, 5],
    },
    "widen": {
        "neighbour_ranks": [2, 5],
        "widen_units": [1, 2, 3],
        "neighbour_margin": [0.1, 0.2, 0.3],
    },
    "sentences": {
        "sentence_reach": [0, 200, 400],
        "neighbour_ranks": [2, 5],
        "widen_units": [1, 2],
        "neighbour_margin": [0.2, 0.3],
    },
    "final": {
        "sentence_reach": [200, 400, 800],
        "neighbour_ranks": [2, 3],
        "widen_units": [2, 3],
        "neighbour_margin": [0.3, 0.4],
        "lexical_weight": [0.5, 1.0],
    },
    "tail": {
        "tail_sentences": [0, 1, 2],
        "tail_margin": [0.0, 0.05, 0.1, 0.2],
        "neighbour_ranks": [2, 3],
    },
    "widen-top": {
        "widen_top_margin": [0.0, 0.05, 0.1, 0.2, 0.3, math.inf],
        "neighbour_ranks": [2, 3, 4],
    },
    "widen-joint": {
        "neighbour_margin": [0.2, 0.3, 0.4],
        "widen_units": [1, 2, 3],
    },
    "tail-reach": {
        "tail_sentences": [0, 1, 2],
        "tail_margin": [0.0, 0.1],
        "neighbour_ranks": [2, 3],
        "sentence_reach": [0, 200],
    },
    "fusion-weight": {
        "vector_weight": [1.5, 2.0, 3.0, 4.0, 6.0],
        "lexical_query_weight": [1.0, 2.0, 4.0],
    },
    "coverage": {
        "coverage_boost": [0.0, 0.5, 1.0, 2.0, 4.0],
        "vector_weight": [2.0, 3.0],
    },
    "coverage-edge": {
        "coverage_boost": [1.5, 2.0, 3.0],
        "vector_weight": [3.0, 4.0],
    },
    "passage": {
        "unit_vector_weight": [0.0, 0.25, 0.5, 1.0],
        "lexical_weight": [0.5, 1.0],
    },
    "passage-margin": {
        "unit_vector_weight": [0.0, 0.25, 0.5],
        "neighbour_margin": [0.1, 0.2, 0.3],
        "widen_units": [1, 2],
    },
    "exact": {
        "lexical_query_weight": [1.0, 2.0, 4.0],  # 1.0: a lexical query weighs as any other
    },
}
"""The grids ``rules`` (metadata lines and merged turns in citations) and ``spread`` (several spans per hit), the
cue and flat-vector parts of ``exact``, and issue 39's ``fusion-convex`` / ``fusion-raw`` / ``fusion-final``
(reciprocal ranks, min-max scaled cosines, a BM25 floor: all lost on every fold; run at commit 7b61f80) scored rules
whose losing branches are deleted (see :mod:`codex_pipeline.retrieval.settings`)."""


@dataclass
class Loaded:
    name: str
    retriever: Retriever
    questions: list[Question]
    maps: dict[str, Any]


@dataclass
class Result:
    evidence: list[Score]
    chunk: list[Score]


def load(name: str, work: Path, corpus: Path, embedder: Any, pooled: bool = False) -> Loaded:
    """Set ``name``'s questions over its own index in ``WORK/<name>``, or with ``pooled`` over its pool's in
    ``WORK/pool-<pool>`` (:data:`POOLS`: built by ``codex eval`` on the pool's gold with ``--work-dir``)."""
    pool = next((p for p, members in POOLS.items() if name in members), None) if pooled else None
    members = POOLS[pool] if pool else [name]
    root = work / (f"pool-{pool}" if pool else name)
    if root not in _OPEN:  # the sets of one pool share its index
        parts = [CorpusPart.parse(p) for m in members for p in SETS[m]]
        wh = Warehouse(root)
        maps = source_maps(wh, DatasetRegistry.build(SETTINGS), parts, gold_of(name, corpus)[1], SETTINGS.partitions_start)
        retriever = Retriever(wh.root, list(dict.fromkeys(p.dataset for p in parts)), embedder=embedder, rebuild=False)
        cache: dict[str, Any] = {}
        embed_query = retriever._query_vector

        def cached(query: str, names: Sequence[str]) -> Any:  # one embedding per question for the whole grid
            if query not in cache:
                cache[query] = embed_query(query, names)
            return cache[query]

        retriever._query_vector = cached  # type: ignore[method-assign]
        _OPEN[root] = (retriever, maps)
    retriever, maps = _OPEN[root]
    gold, root = gold_of(name, corpus)
    return Loaded(name, retriever, load_gold(gold, root), maps)


_OPEN: dict[Path, tuple[Retriever, dict[str, Any]]] = {}


def run(s: Loaded, k: int, settings: RetrievalSettings, mode: str = "hybrid") -> Result:
    """Every question's score on the hits' evidence and on their whole chunks (one search with ``settings``)."""
    retriever = s.retriever.with_settings(settings)
    ev: list[Score] = []
    ch: list[Score] = []
    for q in s.questions:
        reference: dict[str, list[tuple[int, int]]] = {}
        for ref in q.references:
            reference.setdefault(ref.source, []).append((ref.start, ref.end))
        got: dict[str, dict[str, list[tuple[int, int]]]] = {"evidence": {}, "chunk": {}}
        for hit in retriever.search(q.question, k=k, mode=mode):
            smap = s.maps.get(hit.doc_id)
            for kind in got:
                mapped = smap.map(merge(hit_spans(hit, kind))) if smap else {}
                for f, ranges in mapped.items():
                    got[kind].setdefault(f, []).extend(ranges)
        ev.append(score(got["evidence"], reference))
        ch.append(score(got["chunk"], reference))
    return Result(ev, ch)


def objective(summary: Summary) -> float:
    """recall + IoU, percent."""
    return summary.recall + summary.iou


def fmt(s: Summary) -> str:
    return f"{s.recall:5.1f} {s.precision:5.1f} {s.iou:5.1f} {s.hit_at_k:5.1f}"


def chunk_cols(evidence: list[Score], chunk: list[Score]) -> str:
    """Whole-chunk recall and IoU of the same hits, evidence recall as a share of it, evidence length / chunk length."""
    e, c = summarize(evidence), summarize(chunk)
    share = 100 * e.recall / c.recall if c.recall else 0.0
    chars = e.mean_retrieved_chars / c.mean_retrieved_chars if c.mean_retrieved_chars else 0.0
    return f"{c.recall:6.1f} {c.iou:4.1f} {share:5.1f} {chars:5.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/loco"))
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--grid", default="small", choices=sorted(GRIDS))
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="fix a RetrievalSettings field for every point (e.g. sentence_reach=0)")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--mode", default="hybrid", choices=["hybrid", "bm25", "vector"],
                    help="search mode of every point (bm25 / vector: the parts hybrid fusion must not lose to)")
    ap.add_argument("--objective", default="iou@90", choices=["iou@90", "recall+iou", "recall"],
                    help="iou@90 (default): the highest mean IoU among points keeping >= 90%% of the whole chunk's "
                         "recall on every training set (none: the highest lowest share); recall+iou: mean recall + IoU; "
                         "recall: mean cited recall, then IoU (for ranking grids)")
    ap.add_argument("--save", type=Path, help="keep every point's scores in this file (pickle)")
    ap.add_argument("--load", type=Path, help="score from a --save file of the same grid and sets instead of searching")
    ap.add_argument("--dump", action="store_true", help="also print every grid point's figures per set")
    ap.add_argument("--pooled", action="store_true",
                    help="score the sets of each pool (POOLS) over one shared index, as the held-out sets are")
    args = ap.parse_args(argv)
    names = [n for n in args.sets.split(",") if n]
    base = fixed_settings(args.set, ap)
    t0 = time.perf_counter()
    grid = GRIDS[args.grid]
    keys = list(grid)
    defaults = tuple(getattr(base, key) for key in keys)
    points = list(itertools.product(*grid.values()))
    if defaults not in points:
        points.append(defaults)
    results: dict[tuple[Any, ...], dict[str, Result]] = {}
    if args.load:  # re-choose from a saved run (another objective) without searching again
        results = pickle.loads(args.load.read_bytes())
        points = [p for p in points if p in results]
    else:
        embedder = query_embedder("local", SETTINGS)
        sets = [load(n, args.work, args.corpus, embedder, args.pooled) for n in names]
        for p in points:
            candidate = dataclasses.replace(base, **dict(zip(keys, p)))
            results[p] = {s.name: run(s, args.k, candidate, args.mode) for s in sets}
        if args.save:
            args.save.write_bytes(pickle.dumps(results))
    print(f"{len(points)} grid points x {len(names)} sets in {time.perf_counter() - t0:.0f}s; "
          f"objective {args.objective}; grid {args.grid}: {grid}; fixed: {args.set}", file=sys.stderr)
    summ = {p: {n: summarize(r.evidence) for n, r in by.items()} for p, by in results.items()}

    chunk = {p: {n: summarize(r.chunk) for n, r in by.items()} for p, by in results.items()}

    def value(p: tuple[Any, ...], train: Sequence[str]) -> tuple[float, ...]:
        mean = sum(objective(summ[p][n]) for n in train) / len(train)
        if args.objective == "recall+iou":
            return (mean, p == defaults)
        if args.objective == "recall":
            return (sum(summ[p][n].recall for n in train) / len(train),
                    sum(summ[p][n].iou for n in train) / len(train), p == defaults)
        shares = [summ[p][n].recall / chunk[p][n].recall if chunk[p][n].recall else 1.0 for n in train]
        feasible = min(shares) >= 0.9
        iou = sum(summ[p][n].iou for n in train) / len(train)
        return (feasible, iou if feasible else min(shares), p == defaults)

    def best(train: Sequence[str]) -> tuple[Any, ...]:
        return max(points, key=lambda p: value(p, train))

    inside = best(names)
    if args.dump:
        for p in points:
            print(dict(zip(keys, p)), " ".join(f"{n}={summ[p][n].recall:.1f}/{summ[p][n].iou:.1f}" for n in names))
    print(f"in-sample best point: {dict(zip(keys, inside))}")
    print(f"{'set':20} {'n':>3} | {'LOCO R    P    IoU  hit5':24} | chunkR  IoU  R/cR chars | {'in-sample':24} | "
          f"{'defaults':24} | LOCO point")
    pooled: dict[str, list[Score]] = {"loco": [], "chunk": [], "in": [], "def": []}
    for n in names:
        p = best([m for m in names if m != n]) if len(names) > 1 else inside
        r = results[p][n]
        pooled["loco"] += r.evidence
        pooled["chunk"] += r.chunk
        pooled["in"] += results[inside][n].evidence
        pooled["def"] += results[defaults][n].evidence
        print(f"{n:20} {len(r.evidence):3} | {fmt(summarize(r.evidence)):24} | {chunk_cols(r.evidence, r.chunk)} | "
              f"{fmt(summ[inside][n]):24} | {fmt(summ[defaults][n]):24} | {dict(zip(keys, p))}")
    print(f"{'pooled':20} {len(pooled['loco']):3} | {fmt(summarize(pooled['loco'])):24} | "
          f"{chunk_cols(pooled['loco'], pooled['chunk'])} | {fmt(summarize(pooled['in'])):24} | "
          f"{fmt(summarize(pooled['def'])):24} |")
    return 0


def fixed_settings(fixed: Sequence[str], ap: argparse.ArgumentParser) -> RetrievalSettings:
    """The defaults with each ``NAME=VALUE`` of ``--set`` (a field name, any case), parsed by the field's type."""
    names = {f.name for f in dataclasses.fields(RetrievalSettings)}
    changes: dict[str, Any] = {}
    for item in fixed:
        key, _, text = item.partition("=")
        key = key.strip().lower()
        if key not in names:
            ap.error(f"--set {item}: no RetrievalSettings field {key!r} (fields: {', '.join(sorted(names))})")
        changes[key] = type(getattr(DEFAULT, key))(text)
    return dataclasses.replace(DEFAULT, **changes)


if __name__ == "__main__":
    raise SystemExit(main())
