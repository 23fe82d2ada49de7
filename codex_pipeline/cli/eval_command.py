"""``codex eval GOLD.jsonl --corpus DIR --dataset DS``: retrieval quality on exact evidence spans.

Lands the corpus into a data directory (a temporary one unless ``--work-dir``),
materializes ``[DS, raw] → [DS, chunks] → [DS, embeddings] → [DS, search_index]``
through Dagster, asks ``Retriever`` every gold question and prints character-level
recall, precision, IoU and hit@k of the top-k hits (see
:mod:`codex_pipeline.evaluation`). ``--dataset DS=SUBDIR`` (repeatable) pools several
datasets in one index, each landed from its own sub-folder of ``--corpus``.

It refuses to score nothing: when every landed file was rejected, when the asked-for
units were never built, or when ``--no-materialize`` finds no materialization, it
prints one line naming the dataset and the fix and exits 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from codex_pipeline.cli.dataset_names import DatasetNames
from codex_pipeline.cli.query_embedder import configured_embedder, query_embedder
from codex_pipeline.datasets.registry import DatasetRegistry
from codex_pipeline.evaluation.checks import NothingToScore, check_chunks, check_propositions
from codex_pipeline.evaluation.details import SourceTexts, detailed
from codex_pipeline.evaluation.explain import ExplainError, explanation, pick_question, render
from codex_pipeline.evaluation.gold import GoldError, load_gold
from codex_pipeline.evaluation.metrics import Summary
from codex_pipeline.evaluation.runner import (
    SPAN_KINDS,
    UNITS,
    CorpusPart,
    Evaluation,
    evaluate,
    land_corpus,
    source_group,
    source_maps,
)
from codex_pipeline.evaluation.score_parts import score_parts
from codex_pipeline.retrieval import IndexMissing, Retriever, SearchMode
from codex_pipeline.settings import CodexSettings
from codex_pipeline.warehouse.storage import Warehouse


def add_eval_command(sub: Any, names: DatasetNames) -> None:
    """Register ``codex eval`` on the CLI's subparsers."""
    e = sub.add_parser(
        "eval",
        help="land a corpus, materialize it through Dagster and score retrieval on a gold file of exact spans",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    e.add_argument("gold", type=Path, help='JSON Lines: {"question": …, "references": [{"source", "start", "end"}]}')
    e.add_argument("--corpus", type=Path, required=True, help="folder the gold sources are relative to")
    e.add_argument("--dataset", action="append", required=True, metavar="DS[=SUBDIR]", type=names.dataset_part,
                   help="dataset to land the corpus into (repeatable: DS=SUBDIR pools several in one index)")
    e.add_argument("-k", type=int, default=5, help="hits scored per question (default 5)")
    e.add_argument("--mode", choices=[m.value for m in SearchMode], default=SearchMode.HYBRID.value)
    e.add_argument("--spans", choices=SPAN_KINDS, default="evidence",
                   help="score each hit's evidence (default) or its whole chunk")
    e.add_argument("--embedder", default=None, help="local (default, $CODEX_EMBEDDER) or openai")
    e.add_argument("--work-dir", type=Path, default=None,
                   help="data directory to land and materialize into and keep (default: a temporary one, removed)")
    e.add_argument("--no-materialize", action="store_true",
                   help="with --work-dir: score the indexes already there (tuning ranking without re-running Dagster)")
    e.add_argument("--no-evidence-units", action="store_true",
                   help="cite each hit's whole chunk / matching sentence instead of its best evidence unit")
    e.add_argument("--units", choices=UNITS, default="chunks",
                   help="retrieve chunks (default) or seed-002 propositions (materialized for the eval, offline extractor)")
    e.add_argument("--include", action="append", default=[], metavar="GLOB",
                   help="land only the corpus files whose path or name matches (repeatable; e.g. '*.captions.txt')")
    e.add_argument("--per-source", action="store_true",
                   help="also score each source file (each corpus sub-folder when pooled)")
    e.add_argument("--json", action="store_true", help="print the figures as JSON (no progress lines)")
    e.add_argument("--details", action="store_true",
                   help="with --json: every question's scores, gold references and hits, with their texts")
    e.add_argument("--explain", metavar="N|WORDS", default=None,
                   help="score only question N (1-based, or the one whose text holds WORDS) and show its gold text, "
                        "each hit's cited text and score parts (--json: as JSON)")
    e.set_defaults(func=cmd_eval)


def cmd_eval(args: argparse.Namespace) -> int:
    """``codex eval``: exit 1 when there is nothing to score or the materialization failed, 2 when the
    gold file or the corpus cannot be read, or the gold file is invalid."""
    try:
        parts = [CorpusPart.parse(v) for v in args.dataset]
        questions = load_gold(args.gold, args.corpus)
        args.explain_number = pick_question(questions, args.explain, str(args.gold)) if args.explain else None
    except OSError as exc:
        print(f"codex eval: cannot read {exc.filename or args.gold}: {exc.strerror or exc} (check the path)", file=sys.stderr)
        return 2
    except (GoldError, ExplainError, KeyError) as exc:
        print(f"codex eval: {exc}", file=sys.stderr)
        return 2
    if args.work_dir is not None:
        args.work_dir.mkdir(parents=True, exist_ok=True)
        return _run(args, parts, questions, args.work_dir)
    with tempfile.TemporaryDirectory(prefix="codex-eval-") as tmp:
        return _run(args, parts, questions, Path(tmp))


def _run(args: argparse.Namespace, parts: list[CorpusPart], questions: Sequence[Any], data_dir: Path) -> int:
    try:
        return _evaluate(args, parts, questions, data_dir)
    except (NothingToScore, IndexMissing) as exc:
        print(f"codex eval: {exc}", file=sys.stderr)
        return 1


def _evaluate(args: argparse.Namespace, parts: list[CorpusPart], questions: Sequence[Any], data_dir: Path) -> int:
    wh = Warehouse(data_dir)
    day = args.settings.partitions_start
    t0 = time.perf_counter()
    kind = configured_embedder(args.settings, args.embedder)
    datasets = list(dict.fromkeys(p.dataset for p in parts))  # one dataset may be landed from several folders
    reused = args.no_materialize and args.work_dir is not None
    if not reused:
        try:
            landed = land_corpus(wh, parts, args.corpus, day, include=args.include)
        except FileNotFoundError as exc:
            print(f"codex eval: {exc}", file=sys.stderr)
            return 2
        _say(args, f"landed {', '.join(f'{n} file(s) into {ds}' for ds, n in landed.items())} ({day})")
        progress = None if args.json else sys.stderr
        if not materialize(wh, args.settings, args.names.registry, datasets, day, kind, propositions=args.units == "propositions", progress=progress):
            print("codex eval: the materialization failed (see the Dagster log above)", file=sys.stderr)
            return 1
        _say(args, f"materialized through Dagster in {time.perf_counter() - t0:.1f}s")
    check_chunks(wh, datasets, day, reused, kept=args.work_dir is not None)
    maps = source_maps(wh, args.names.registry, parts, args.corpus, day)
    embedder = query_embedder(kind, args.settings) if args.mode != SearchMode.BM25.value else None
    retriever = Retriever(wh.root, datasets, embedder=embedder, evidence_units=not args.no_evidence_units)
    if args.units == "propositions":
        check_propositions({ds: _propositions(retriever, ds) for ds in datasets}, wh.root, reused)
    t1 = time.perf_counter()
    if args.explain_number is not None:
        questions = [questions[args.explain_number - 1]]
    result = evaluate(retriever, questions, maps, k=args.k, mode=args.mode, spans=args.spans, units=args.units)
    _say(args, f"{len(questions)} questions in {time.perf_counter() - t1:.1f}s")
    if args.explain_number is not None:
        shown = score_parts(retriever, questions[0].question, result.results[0].hits, args.units,
                            with_vector=args.mode != SearchMode.BM25.value)
        exp = explanation(result, args.explain_number, shown, SourceTexts(args.corpus))
        print(json.dumps(exp, indent=1) if args.json else render(exp))
        return 0
    group = source_group(parts) if args.per_source else None
    if args.json:
        out = detailed(result, SourceTexts(args.corpus), group) if args.details else result.as_dict(group)
        print(json.dumps(out, indent=1))
    else:
        _print(result, datasets, maps)
        if group is not None:
            _print_groups(result.per_source(group), result.k)
    return 0


def _propositions(retriever: Retriever, dataset: str) -> int | None:
    if dataset not in retriever.datasets:
        raise IndexMissing(retriever.skipped.get(dataset) or f"{dataset} has no search index: run without "
                           "--no-materialize to build it")
    props = retriever.index(dataset).propositions
    return None if props is None else len(props)


def materialize(wh: Warehouse, settings: CodexSettings, registry: DatasetRegistry, datasets: Sequence[str], day: dt.date,
                embedder_kind: str, propositions: bool = False, progress: TextIO | None = None) -> bool:
    """Raw, chunks, embeddings and search index of ``datasets`` for ``day`` (and propositions), in one Dagster run.

    ``progress``: where to write a line as each asset step starts and ends (a run takes minutes on a real corpus).
    """
    import dagster as dg

    from codex_pipeline.cli.eval_progress import progress_logger
    from codex_pipeline.defs.assets import build_dataset_assets
    from codex_pipeline.defs.partitions import daily_partitions
    from codex_pipeline.defs.proposition_assets import PropositionSettings, build_proposition_assets
    from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
    from codex_pipeline.defs.run_hygiene import sigterm_kept
    from codex_pipeline.defs.search_assets import build_search_index_asset

    partitions = daily_partitions(settings)
    assets = []
    for name in datasets:
        spec = registry.get(name)
        assets += [*build_dataset_assets(spec, partitions), build_search_index_asset(spec, partitions)]
        if propositions:  # whether or not the registry opts the dataset in: the eval compares units
            assets += build_proposition_assets(spec, partitions)
    loggers = {"console": dg.colored_console_logger}
    run_loggers: dict[str, Any] = {"console": {"config": {"log_level": "WARNING"}}}
    if progress is not None:
        loggers["progress"] = progress_logger(progress)
        run_loggers["progress"] = {}
    defs = dg.Definitions(
        assets=assets,
        jobs=[dg.define_asset_job("codex_eval")],
        resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)), "embedding": EmbeddingSettings.from_settings(settings, embedder_kind),
                   "propositions": PropositionSettings()},
        loggers=loggers,
    )
    with sigterm_kept():
        result = defs.resolve_job_def("codex_eval").execute_in_process(
            partition_key=day.isoformat(), raise_on_error=False, run_config={"loggers": run_loggers})
    return bool(result.success)


def _say(args: argparse.Namespace, line: str) -> None:
    print(f"codex eval: {line}", file=sys.stderr if args.json else sys.stdout, flush=True)


def _print_groups(groups: dict[str, Summary], k: int) -> None:
    width = max(len(g) for g in [*groups, "per source"])
    print(f"  {'per source':<{width}} {'questions':>9} {'recall':>7} {'precision':>9} {'IoU':>6} {'hit@' + str(k):>6}")
    for name, s in groups.items():
        print(f"  {name:<{width}} {s.questions:>9} {s.recall:7.1f} {s.precision:9.1f} {s.iou:6.1f} {s.hit_at_k:6.1f}")


def _print(result: Evaluation, datasets: Sequence[str], maps: dict[str, Any]) -> None:
    s = result.summary
    print(f"datasets {', '.join(datasets)}: {s.questions} questions, top-{result.k}, {result.mode}, {result.spans} spans")
    print(f"  recall     {s.recall:6.1f}")
    print(f"  precision  {s.precision:6.1f}")
    print(f"  IoU        {s.iou:6.1f}")
    print(f"  hit@{result.k:<6} {s.hit_at_k:6.1f}")
    print(f"  retrieved  {s.mean_retrieved_chars:6.0f} chars per question (mean)")
    low = [m for m in maps.values() if m.coverage < 0.5]
    if result.unmapped_chars or low:
        print(f"  note: {result.unmapped_chars} retrieved characters are template text with no place in a source "
              f"file (not counted); {len(low)} document(s) map less than half their text to files")
