"""``codex sources check FILE --mapping M``, ``init FILE`` and ``page M``: try a mapping before landing.

``check`` reads the export through the mapping exactly as the raw step would (same reader,
rules and de-duplication) and writes nothing: how the first rows map, how many rows would
land, and every reject with its row, column and rule. ``init`` drafts a mapping from the
header and a sample of rows; ``page`` writes the dataset's documentation page from the mapping.
docs/datasets/mappings.md is the guide.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from codex_pipeline.cli.errors import CliError
from codex_pipeline.sources.mapping.check import CheckReport, check_file
from codex_pipeline.sources.mapping.draft import draft_mapping
from codex_pipeline.sources.mapping.kinds import load_mapped_dataset
from codex_pipeline.sources.mapping.page import render_page
from codex_pipeline.sources.mapping.schema import MappingError


def add_sources_command(sub: Any) -> None:
    """Register ``codex sources {check,init,page}`` on the CLI's subparsers."""
    p = sub.add_parser("sources", help="try a source mapping on an export before landing it (check, init, page)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    s = p.add_subparsers(dest="sources_command", required=True, metavar="{check,init,page}")
    c = s.add_parser("check", help="how the first rows map, and which rows would be rejected and why")
    c.add_argument("file", type=Path, help="the export (CSV, JSON Lines or a JSON array)")
    c.add_argument("--mapping", "-m", type=Path, required=True, help="the mapping file (YAML)")
    c.add_argument("--rows", type=int, default=5, help="rows shown (default 5)")
    c.add_argument("--max-rejects", type=int, default=20, help="rejects listed (default 20; --json lists all)")
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.add_argument("--region", default=None, metavar="LON_MIN,LAT_MIN,LON_MAX,LAT_MAX",
                   help="warn on points outside this lon/lat box (write --region=LON_MIN,...)")
    c.set_defaults(func=cmd_check)
    i = s.add_parser("init", help="draft a mapping from the export's header and a sample of its rows (YAML on stdout)")
    i.add_argument("file", type=Path, help="the export (CSV, JSON Lines or a JSON array)")
    i.add_argument("--dataset", default=None, help="dataset name (default: from the file name)")
    i.add_argument("--sample", type=int, default=1000, help="rows sampled for types and formats (default 1000)")
    i.add_argument("--kind", choices=["record", "permit"], default="record",
                   help="record (default: every column a field) or permit (columns matched to permit fields by what they hold)")
    i.add_argument("--delimiter", default=None, help="CSV delimiter (default: sniffed; \\t for a tab)")
    i.add_argument("--encoding", default=None, help="file encoding, a Python codec name (default: sniffed)")
    i.add_argument("--region", default=None, metavar="LON_MIN,LAT_MIN,LON_MAX,LAT_MAX",
                   help="where the rows are, a lon/lat box (write --region=-73.3,44.4,-73.1,44.6): picks the coordinate system that puts x/y there")
    i.set_defaults(func=cmd_init)
    g = s.add_parser("page", help="the dataset's documentation page, written from its mapping (Markdown on stdout)")
    g.add_argument("mapping", type=Path, help="the mapping file (YAML)")
    g.set_defaults(func=cmd_page)


def _file(path: Path) -> Path:
    if not path.is_file():
        raise CliError(f"{path}: no such file; give the export to read")
    return path.resolve()


def cmd_check(args: argparse.Namespace) -> int:
    """``codex sources check``: exit 1 when the file is rejected or no row would land; a bad mapping
    or a missing file is a :class:`CliError`."""
    try:
        md = load_mapped_dataset(args.mapping)
        region = _region(args.region)
        report = check_file(md, _file(args.file), max(args.rows, 0), region=region)
    except MappingError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        json.dump(report.as_json(), sys.stdout, ensure_ascii=False, indent=1, default=str)
        print()
    else:
        print_report(report, args.max_rejects)
    return 0 if not report.file_rejects and report.landed else 1


def _region(text: str | None) -> tuple[float, float, float, float] | None:
    from codex_pipeline.sources.mapping.crs_guess import parse_region

    try:
        return parse_region(text) if text else None
    except ValueError as exc:
        raise CliError(str(exc)) from None


def print_report(r: CheckReport, max_rejects: int) -> None:
    """Print ``r``: the file's rejects, the row counts, how the first rows land, and at most
    ``max_rejects`` rejected rows."""
    print(f"mapping {r.mapping} → dataset {r.dataset} (kind {r.kind}); file {r.file}")
    for why in r.file_rejects:
        print(f"FILE REJECTED: {why}")
    print(f"rows: {r.rows} read, {r.landed} would land, {len(r.rejects)} rejected"
          + (f", {r.merged} merged" if r.merged else "") + (f", {r.filtered} filtered" if r.filtered else ""))
    for w in r.warnings:
        print(f"warning: {w}")
    for o in r.first_rows:
        if o.reject is not None:
            print(f"\n{o.ref}: {'' if o.reject.startswith('merged into') else 'REJECTED: '}{o.reject}")
        else:
            print(f"\n{o.ref}: lands as")
            print("  " + (o.text or "").replace("\n", "\n  "))
    if r.rejects:
        print(f"\nrejects ({len(r.rejects)}{'' if len(r.rejects) <= max_rejects else f', first {max_rejects}'}):")
        for ref, why in r.rejects[:max_rejects]:
            print(f"  {ref}: {why}")
    if r.notes:
        print(f"\nnotes: optional values nulled, rows kept ({len(r.notes)}):")
        for ref, why in r.notes[:max_rejects]:
            print(f"  {ref}: {why}")


def cmd_init(args: argparse.Namespace) -> int:
    """``codex sources init``: the drafted mapping (YAML) on stdout, what it is unsure of and the rows the
    reader rejected on stderr; a file it cannot read is a :class:`CliError` (one line, exit 2)."""
    from codex_pipeline.sources.mapping.crs_guess import parse_region
    from codex_pipeline.sources.mapping.sniff import Unreadable

    delimiter = {"\\t": "\t", "tab": "\t"}.get(args.delimiter, args.delimiter)
    if delimiter is not None and len(delimiter) != 1:
        raise CliError(f"--delimiter {args.delimiter!r}: give one character (',' ';' '|' or \\t)")
    try:
        region = parse_region(args.region) if args.region else None
        draft = draft_mapping(_file(args.file), sample=max(args.sample, 1), dataset=args.dataset, kind=args.kind,
                              delimiter=delimiter, encoding=args.encoding, region=region)
    except (Unreadable, ValueError) as exc:
        raise CliError(str(exc)) from None
    for p in draft.problems:
        print(f"codex sources init: {args.file.name} {p}", file=sys.stderr)
    for w in draft.warnings:
        print(f"codex sources init: warning: {w}", file=sys.stderr)
    sys.stdout.write(draft.text)
    return 0


def cmd_page(args: argparse.Namespace) -> int:
    """``codex sources page``: the dataset's page (Markdown) on stdout, with the chunker and source
    versions the code location gives the dataset."""
    from codex_pipeline.datasets.registry import mapped_spec  # the versions the code location gives the dataset

    try:
        md = load_mapped_dataset(args.mapping)
    except MappingError as exc:
        raise CliError(str(exc)) from None
    spec = mapped_spec(md)
    sys.stdout.write(render_page(md.mapping, md.path, spec.chunker_revision, spec.source_version))
    return 0
