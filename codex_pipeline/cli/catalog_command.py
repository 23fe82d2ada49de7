"""`codex catalog rebuild`: the DuckDB catalog and its view registry derived again from the warehouse's files.

The catalog repairs itself on open (a damaged file, or one built for another copy of
the data directory); this is the same rebuild on demand, e.g. after restoring a backup
before opening the catalog with plain DuckDB, which does not check it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from codex_pipeline.warehouse.catalog import CatalogBusy, CatalogError, rebuild_catalog, table_keys
from codex_pipeline.warehouse.storage import Warehouse


def add_catalog_command(sub: Any) -> None:
    """Register ``codex catalog rebuild`` on the CLI's subparsers."""
    c = sub.add_parser("catalog", help="the DuckDB catalog of views (codex_catalog.duckdb)")
    actions = c.add_subparsers(dest="catalog_command", required=True)
    r = actions.add_parser(
        "rebuild", help="rebuild codex_catalog.duckdb and codex_catalog.views.json from the Parquet files of the data dir"
    )
    r.set_defaults(func=cmd_catalog_rebuild)


def cmd_catalog_rebuild(args: argparse.Namespace) -> int:
    """``codex catalog rebuild``: exit 1 when a view was left out (a file it reads is damaged), 2 when
    the catalog is locked by another process or cannot be rebuilt."""
    wh = Warehouse(args.data_dir)
    try:
        views, failed = rebuild_catalog(wh)
    except (CatalogBusy, CatalogError) as exc:
        print(f"codex catalog rebuild: {exc}", file=sys.stderr)
        return 2
    known = set(args.names.registry.names())
    datasets = sorted({key.split("/", 1)[0] for key in table_keys(wh)})
    print(f"rebuilt {wh.catalog_path}: {len(views)} views over {len(datasets)} dataset(s) under {wh.root / 'warehouse'}")
    for name in (d for d in datasets if d not in known):
        print(f"  note: {name} is not a dataset of the registry; its folder's tables got views all the same")
    for name, why in sorted(failed.items()):
        print(
            f"codex catalog rebuild: codex.{name} left out ({why}); "
            "the next run of its dataset sets a damaged file aside and rebuilds it",
            file=sys.stderr,
        )
    return 1 if failed else 0
