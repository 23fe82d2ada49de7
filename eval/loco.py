"""Leave-one-corpus-out (LOCO) scores of the tuned ranking and citation constants (issue 26 item 2).

    python eval/loco.py --work /tmp/loco [--sets council,docs,...] [--grid small] [--pooled]

Each dev set must have been materialized once into ``WORK/<set>`` by ``codex eval`` with
``--work-dir WORK/<set>`` (the commands are in ``eval/README.md``); this script then drives
``Retriever`` in-process over those indexes (no Dagster, no re-embedding) for every point of a
small grid of :mod:`codex_pipeline.retrieval.settings` values. ``--pooled`` scores the sets of each
:data:`POOLS` entry over one shared index in ``WORK/pool-<name>`` instead, as the held-out evaluation
pools corpora (there a lower hit holds the answer more often than in a set's own index).

For each held-out set ``c``: the grid point maximizing the mean objective over the *other*
sets is chosen, and ``c`` is scored with it. Objective (``--objective``, default ``iou@90``): the
highest mean IoU among the grid points whose cited passages keep at least 90% of the whole
chunk's recall on every training set; ``recall+iou`` is the other choice (it always picks the
widest citation). Means over each set's questions; sets weigh equally. Printed per set: the LOCO figures (recall / precision /
IoU / hit@5), the whole-chunk recall of the same hits, the in-sample figures (the point best on
all sets) and the current defaults' figures; then the same pooled over all questions.
Constants that change what is embedded (``UNIT_TOKENS``) are not in the grid.
"""

from __future__ import annotations

import argparse
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
from codex_pipeline.retrieval import Retriever, settings
from codex_pipeline.settings import CodexSettings
from codex_pipeline.warehouse.storage import Warehouse

SETTINGS = CodexSettings.from_env(os.environ)  # a script: the edge of its own process

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent / "shared" / "corpora"

SETS: dict[str, list[str]] = {  # set -> its --dataset DS=SUBDIR parts (as in eval/README.md)
    "council": ["civic_intelligence=council"],
    "docs": ["docs=markdown/httpx"],
    "email": ["email_threads=email"],
    "uv": ["docs=markdown/uv"],
    "huntsville": ["narrative=council_captions/huntsville-al"],
    "huntsville-whisper": ["narrative=council_captions/huntsville-al"],
    "seattle": ["seattle_preapplications=permits"],
    "pdf": ["documents=pdf"],
}

POOLS: dict[str, list[str]] = {  # --pooled: these sets share one index, as the held-out protocol pools them
    "first": ["council", "docs", "email"],
    "second": ["uv", "huntsville", "seattle"],
}

GRIDS: dict[str, dict[str, list[Any]]] = {
    "none": {},
    "small": {
        "LEXICAL_FLOOR": [0.3, 0.5, 0.7],
        "BM25_WEIGHT": [1.0, 1.5],
        "LEXICAL_WEIGHT": [0.25, 0.5, 1.0],
        "NEIGHBOUR_MARGIN": [0.1, 0.2, 0.3],
    },
    "citation": {
        "LEXICAL_WEIGHT": [0.25, 0.5, 1.0],
        "NEIGHBOUR_MARGIN": [0.1, 0.2, 0.3],
        "NEIGHBOUR_RANKS": [2, 5],
    },
    "widen": {
        "NEIGHBOUR_RANKS": [2, 5],
        "WIDEN_UNITS": [1, 2, 3],
        "NEIGHBOUR_MARGIN": [0.1, 0.2, 0.3],
    },
    "rules": {
        "SKIP_METADATA": [False, True],
        "BRIDGE_TURNS": [True, False],
        "WIDEN_UNITS": [1, 3],
        "NEIGHBOUR_MARGIN": [0.2, 0.3],
    },
    "spread": {
        "WIDEN_ANYWHERE": [False, True],
        "NEIGHBOUR_RANKS": [2, 5],
        "WIDEN_UNITS": [1, 2, 4],
        "NEIGHBOUR_MARGIN": [0.15, 0.3, 0.45],
    },
    "sentences": {
        "SENTENCE_REACH": [0, 200, 400],
        "NEIGHBOUR_RANKS": [2, 5],
        "WIDEN_UNITS": [1, 2],
        "NEIGHBOUR_MARGIN": [0.2, 0.3],
    },
    "final": {
        "SENTENCE_REACH": [200, 400, 800],
        "NEIGHBOUR_RANKS": [2, 3],
        "WIDEN_UNITS": [2, 3],
        "NEIGHBOUR_MARGIN": [0.3, 0.4],
        "LEXICAL_WEIGHT": [0.5, 1.0],
    },
    "tail": {
        "TAIL_SENTENCES": [0, 1, 2],
        "TAIL_MARGIN": [0.0, 0.05, 0.1, 0.2],
        "NEIGHBOUR_RANKS": [2, 3],
    },
    "widen-top": {
        "WIDEN_TOP_MARGIN": [0.0, 0.05, 0.1, 0.2, 0.3, math.inf],
        "NEIGHBOUR_RANKS": [2, 3, 4],
    },
    "widen-joint": {
        "NEIGHBOUR_MARGIN": [0.2, 0.3, 0.4],
        "WIDEN_UNITS": [1, 2, 3],
    },
    "tail-reach": {
        "TAIL_SENTENCES": [0, 1, 2],
        "TAIL_MARGIN": [0.0, 0.1],
        "NEIGHBOUR_RANKS": [2, 3],
        "SENTENCE_REACH": [0, 200],
    },
    "fusion": {
        "LEXICAL_FLOOR": [0.3, 0.5, 0.7],
        "BM25_WEIGHT": [1.0, 1.5, 2.0],
    },
    "exact": {
        "LEXICAL_CUES": ["none", "codes", "names"],
        "LEXICAL_QUERY_WEIGHT": [1.0, 2.0, 4.0],
        "FLAT_SPREAD": [0.0, 0.05],
    },
}


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
        maps = source_maps(wh, DatasetRegistry.build(SETTINGS), parts, corpus, SETTINGS.partitions_start)
        retriever = Retriever(wh.root, [p.dataset for p in parts], embedder=embedder, rebuild=False)
        cache: dict[str, Any] = {}
        embed_query = retriever._query_vector

        def cached(query: str, names: Sequence[str]) -> Any:  # one embedding per question for the whole grid
            if query not in cache:
                cache[query] = embed_query(query, names)
            return cache[query]

        retriever._query_vector = cached  # type: ignore[method-assign]
        _OPEN[root] = (retriever, maps)
    retriever, maps = _OPEN[root]
    return Loaded(name, retriever, load_gold(HERE / f"{name}.gold.jsonl", corpus), maps)


_OPEN: dict[Path, tuple[Retriever, dict[str, Any]]] = {}


def run(s: Loaded, k: int) -> Result:
    """Every question's score on the hits' evidence and on their whole chunks (one search)."""
    ev: list[Score] = []
    ch: list[Score] = []
    for q in s.questions:
        reference: dict[str, list[tuple[int, int]]] = {}
        for ref in q.references:
            reference.setdefault(ref.source, []).append((ref.start, ref.end))
        got: dict[str, dict[str, list[tuple[int, int]]]] = {"evidence": {}, "chunk": {}}
        for hit in s.retriever.search(q.question, k=k):
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
                    help="fix a settings constant for every point (e.g. CITATION=widen)")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--objective", default="iou@90", choices=["iou@90", "recall+iou"],
                    help="iou@90 (default): the highest mean IoU among points keeping >= 90%% of the whole chunk's "
                         "recall on every training set (none: the highest lowest share); recall+iou: mean recall + IoU")
    ap.add_argument("--save", type=Path, help="keep every point's scores in this file (pickle)")
    ap.add_argument("--load", type=Path, help="score from a --save file of the same grid and sets instead of searching")
    ap.add_argument("--dump", action="store_true", help="also print every grid point's figures per set")
    ap.add_argument("--pooled", action="store_true",
                    help="score the sets of each pool (POOLS) over one shared index, as the held-out sets are")
    args = ap.parse_args(argv)
    names = [n for n in args.sets.split(",") if n]
    for fixed in args.set:
        key, _, text = fixed.partition("=")
        old = getattr(settings, key)
        setattr(settings, key, text == "True" if isinstance(old, bool) else type(old)(text))
    t0 = time.perf_counter()
    grid = GRIDS[args.grid]
    keys = list(grid)
    defaults = tuple(getattr(settings, key) for key in keys)
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
            for key, v in zip(keys, p):
                setattr(settings, key, v)
            results[p] = {s.name: run(s, args.k) for s in sets}
        for key, v in zip(keys, defaults):
            setattr(settings, key, v)
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


if __name__ == "__main__":
    raise SystemExit(main())
