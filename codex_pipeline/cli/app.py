"""`codex` command line: run the pipeline through Dagster, query the catalog."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from codex_pipeline.cli.catalog_command import add_catalog_command
from codex_pipeline.cli.dagster_home import InstanceGuard, check_home
from codex_pipeline.cli.dataset_names import DatasetNames
from codex_pipeline.cli.errors import OneLineParser, one_line
from codex_pipeline.cli.eval_command import add_eval_command
from codex_pipeline.cli.inspect_commands import add_inspect_commands
from codex_pipeline.cli.query_command import add_query_command
from codex_pipeline.cli.search_command import add_search_command
from codex_pipeline.cli.serve_command import add_serve_command
from codex_pipeline.cli.sources_command import add_sources_command
from codex_pipeline.cli.tables import print_table
from codex_pipeline.cli.validate_command import add_validate_command
from codex_pipeline.datasets.days import DayError, check_days
from codex_pipeline.datasets.registry import DatasetRegistry
from codex_pipeline.datasets.sample_data import install_sample_landing, sample_days
from codex_pipeline.explore.stats import token_percentiles
from codex_pipeline.settings import CodexSettings, SettingsError
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.queries import EXAMPLE_SQL
from codex_pipeline.warehouse.storage import Warehouse, sweep_temp_files

COUNTS_SQL = """\
SELECT chunk_type, count(*) AS chunks, count(DISTINCT doc_id) AS documents, list(token_count) AS tokens
FROM codex.{dataset}_chunks GROUP BY chunk_type ORDER BY chunk_type"""
COUNTS_COLUMNS = ["chunk_type", "chunks", "documents", "p50_tokens", "max_tokens"]


def chunk_counts(con, dataset: str) -> list[tuple[object, ...]]:
    """The demo's table of a dataset's chunks by type (COUNTS_COLUMNS). Its p50 is ``token_percentiles``',
    the one median that ``codex inspect summary`` and the chunks asset's metadata report too (DuckDB's
    ``median`` interpolates between the two middle counts, and so disagreed with them)."""
    rows: list[tuple[object, ...]] = []
    for chunk_type, chunks, documents, tokens in con.execute(COUNTS_SQL.format(dataset=dataset)).fetchall():
        pct = token_percentiles(tokens)
        rows.append((chunk_type, chunks, documents, pct["p50"], pct["max"]))
    return rows


def _print_rows(con, sql: str, params: Sequence[object] = (), records: bool = False) -> None:
    """Print a query's rows as an aligned table, or as ``col=value`` records."""
    cur = con.execute(sql, list(params))
    print_table([d[0] for d in cur.description], cur.fetchall(), records)


def run_days(days: Sequence[str], settings: CodexSettings, registry: DatasetRegistry) -> bool:
    """Materialize every asset for each day through Dagster, on the local instance (``$DAGSTER_HOME``).

    The code location is built here from the command's settings (its ``--data-dir`` included),
    as ``defs/`` builds it from the environment's.
    """
    import dagster as dg

    from codex_pipeline.defs.definitions import build_definitions
    from codex_pipeline.defs.run_hygiene import local_run_tags, sigterm_kept, sweep_dead_runs

    job = build_definitions(settings, registry).resolve_job_def("codex_all")
    home = str(settings.dagster_home) if settings.dagster_home else None
    check_home(home)
    ok = True
    with InstanceGuard(home, days[0]) as guard:  # a full $DAGSTER_HOME: one line, no run left open
        instance = dg.DagsterInstance.get() if home else dg.DagsterInstance.ephemeral()
        guard.instance = instance
        swept = sweep_dead_runs(instance)  # runs killed earlier must not hold pool slots
        if swept.failed or swept.freed:
            print(f"codex: {swept}", flush=True)
        temps = sweep_temp_files(Warehouse(settings.data_dir).root)
        if temps:
            print(f"codex: removed {len(temps)} temp file(s) left by killed writers", flush=True)
        for i, day in enumerate(days, 1):
            guard.day = day
            t0 = time.perf_counter()
            print(f"[{i}/{len(days)}] materializing partition {day} ...", flush=True)
            with sigterm_kept():  # `kill` must still stop a backgrounded `codex materialize`
                result = job.execute_in_process(
                    partition_key=day,
                    instance=instance,
                    raise_on_error=False,
                    run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
                    tags=local_run_tags(),
                )
            status = "ok" if result.success else "FAILED"
            print(f"[{i}/{len(days)}] {day}: {status} in {time.perf_counter() - t0:.1f}s (run {result.run_id[:8]})",
                  flush=True)
            ok &= result.success
    return ok


def cmd_demo(args: argparse.Namespace) -> int:
    """``codex demo``: install the sample landing data, materialize the days (default: every sample day),
    print chunk counts, rejects and an example query; exit 1 when a run failed, 2 on a bad day."""
    wh = Warehouse(args.data_dir)
    copied = install_sample_landing(wh)
    print(f"data dir: {wh.root} ({len(copied)} sample landing folders installed)")
    try:
        days = check_days(args.days, start=args.settings.partitions_start) if args.days else sample_days()
    except DayError as exc:
        print(f"codex demo: {exc}", file=sys.stderr)
        return 2
    ok = run_days(days, args.settings, args.names.registry)
    registry = args.names.registry
    con = connect_catalog(wh, read_only=True)
    try:
        for spec in registry:
            if not spec.chunked or not wh.has_files(spec.name, "chunks"):
                continue
            print(f"\ncodex.{spec.name}_chunks:")
            print_table(COUNTS_COLUMNS, chunk_counts(con, spec.name))
        rejects = [s.name for s in registry if wh.has_files(s.name, "rejects")]
        if rejects:
            print("\nrejected inputs (codex.<dataset>_rejects):")
            _print_rows(con, " UNION ALL ".join(
                f"SELECT '{n}' AS dataset, count(*) AS rejects FROM codex.{n}_rejects" for n in rejects))
        hit = con.execute(
            "SELECT dataset, chunk_id FROM ("
            + " UNION ALL ".join(
                f"SELECT '{s.name}' AS dataset, chunk_id, parent_chunk_id FROM codex.{s.name}_chunks"
                for s in registry if s.chunked and wh.has_files(s.name, "chunks"))
            + ") WHERE parent_chunk_id IS NOT NULL LIMIT 1"
        ).fetchall() if any(s.chunked and wh.has_files(s.name, "chunks") for s in registry) else []
        if hit:
            sql = EXAMPLE_SQL.format(dataset=hit[0][0], hit=hit[0][1], suffix="")
            print(f"\nexample query on {wh.catalog_path}:\n{sql}")
            _print_rows(con, sql)
        else:
            first = registry.names(chunked=True)[0]
            sql = (f"SELECT doc_id, count(*) AS chunks, sum(token_count) AS tokens "
                   f"FROM codex.{first}_chunks GROUP BY doc_id ORDER BY doc_id")
            print(f"\nexample query on {wh.catalog_path}:\n{sql}")
            _print_rows(con, sql)
    finally:
        con.close()
    return 0 if ok else 1


def cmd_materialize(args: argparse.Namespace) -> int:
    """``codex materialize DAY…``: exit 1 when a day's run failed, 2 on a bad day."""
    try:
        days = check_days(args.days, start=args.settings.partitions_start)
    except DayError as exc:
        print(f"codex materialize: {exc}", file=sys.stderr)
        return 2
    return 0 if run_days(days, args.settings, args.names.registry) else 1


def build_parser(settings: CodexSettings | None = None) -> argparse.ArgumentParser:
    """The ``codex`` parser for a deployment's ``settings`` (default: the built-in defaults)."""
    settings = settings or CodexSettings()
    names = DatasetNames(settings)
    p = OneLineParser(prog="codex", description=__doc__)
    p.add_argument("--data-dir", default=str(settings.data_dir) if settings.data_dir else None,
                   help="data directory (default: $CODEX_DATA_DIR or ./data)")
    p.set_defaults(names=names)
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="install the sample landing data, run every asset for the sample days, show results")
    d.add_argument("--days", nargs="*", help="partition days (default: all sample days)")
    d.set_defaults(func=cmd_demo)
    m = sub.add_parser("materialize", help="run every asset for the given days through Dagster")
    m.add_argument("days", nargs="+", help="partition days, YYYY-MM-DD")
    m.set_defaults(func=cmd_materialize)
    add_query_command(sub)
    add_catalog_command(sub)
    add_search_command(sub, names)
    add_serve_command(sub)
    add_inspect_commands(sub)
    add_eval_command(sub, names)
    add_validate_command(sub, names)
    add_sources_command(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``codex`` on ``argv`` (default: the process's arguments) and return the exit status: the
    command's, 2 on bad settings, a usage error or any other error (one line on stderr; the
    traceback only under ``python -X dev``), 130 when interrupted."""
    try:
        settings = CodexSettings.from_env(os.environ)
    except SettingsError as exc:
        print(f"codex: {exc}", file=sys.stderr)
        return 2
    try:
        args = build_parser(settings).parse_args(argv)
    except SystemExit as done:  # --help, or a usage error already printed as one line
        return done.code if isinstance(done.code, int) else 2
    args.settings = settings.replace(data_dir=Path(args.data_dir) if args.data_dir else None)
    try:
        return args.func(args)
    except BrokenPipeError:  # `codex … | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"codex {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # every error is one line (docs/cli.md); the traceback only under `python -X dev`
        if sys.flags.dev_mode:
            raise
        print(f"codex {args.command}: {_error_line(exc, args)}", file=sys.stderr)
        return 2


def _error_line(exc: Exception, args: argparse.Namespace) -> str:
    line = one_line(exc, Warehouse(args.data_dir))
    if line is not None:
        return line
    what = " ".join(str(exc).split())[:300]
    return (f"unexpected {type(exc).__name__}: {what} (a bug in codex: please report it with the command line; "
            f"`python -X dev -m codex_pipeline.cli …` shows the traceback)")


if __name__ == "__main__":
    sys.exit(main())
