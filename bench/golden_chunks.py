"""Digest of every chunk the library cuts from the bundled samples and the shared corpora.

A refactor that must not change output runs this before and after and compares the two
files: one SHA-256 per (dataset, source) over every raw and chunk row (all columns but the
run's timestamps), so a single changed offset, id or token count shows up by name.

    python bench/golden_chunks.py > before.json     # on the old commit
    python bench/golden_chunks.py --compare before.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

import codex_pipeline
from codex_pipeline.core.documents import Reject
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import default_registry, get_dataset

ROOT = Path(codex_pipeline.__file__).resolve().parents[1]  # the checkout whose code is measured
SAMPLES = ROOT / "codex_pipeline" / "sample_landing"
CORPORA = ROOT.parent / "shared" / "corpora"
DAY = dt.date(2026, 11, 24)
STAMP = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)

# shared corpus folder (or file) -> the dataset whose reader takes it as it is
CORPUS_DATASETS = {
    "council": "civic_intelligence",
    "council_captions/huntsville-al": "narrative",
    "email": "email_threads",
    "markdown/httpx": "docs",
    "markdown/uv": "docs",
    "permits/calgary_building_permits.csv": "permit_signals",
}


def _sources() -> Iterator[tuple[str, str, Path]]:
    for spec in default_registry():
        if not spec.chunked:
            continue
        for day in sorted((SAMPLES / spec.name).iterdir()):
            yield spec.name, f"sample/{spec.name}/{day.name}", day
    for rel, dataset in CORPUS_DATASETS.items():
        src = CORPORA / rel
        if src.exists():
            yield dataset, f"corpus/{rel}", src


def _digest(table: pa.Table, drop: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    kept = table.drop_columns([c for c in drop if c in table.column_names])
    for row in kept.to_pylist():
        h.update(json.dumps(row, sort_keys=True, default=str).encode())
    return h.hexdigest()


def digest_source(dataset: str, folder: Path) -> dict[str, object]:
    spec = get_dataset(dataset)
    with tempfile.TemporaryDirectory() as tmp:
        day_dir = Path(tmp) / "day"
        if folder.is_dir():
            shutil.copytree(folder, day_dir, ignore=shutil.ignore_patterns("*.md") if dataset != "docs" else None)
        else:
            day_dir.mkdir()
            shutil.copy(folder, day_dir / folder.name)
        rejects: list[Reject] = []
        raw = steps.ingest(spec, DAY, list(spec.documents(day_dir, rejects)), rejects)
    docs = steps.documents_from_raw(raw.table)
    out = steps.chunk(spec, DAY, docs, STAMP)
    return {
        "documents": raw.documents,
        "chunks": out.table.num_rows,
        # raw.revision_digest (added after the first golden files) is left out: the chunk rows'
        # locators carry it, and a test checks it against the chunk step's own computation
        "raw": _digest(raw.table, ("revision_digest",)),
        "chunk_rows": _digest(out.table, ("chunked_at",)),
        "rejects": sorted((r["stage"], r["source_file"], r["reason"]) for r in
                          pa.concat_tables([raw.rejects, out.rejects]).to_pylist()).__repr__(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", type=Path, help="a previous output: exit 1 and name every source that differs")
    args = ap.parse_args()
    found = {}
    for dataset, name, folder in _sources():
        print(f"golden: {name}", file=sys.stderr)
        found[name] = digest_source(dataset, folder)
    if args.compare is None:
        json.dump(found, sys.stdout, indent=1, sort_keys=True)
        return 0
    before = json.loads(args.compare.read_text())
    differ = sorted(k for k in before.keys() | found.keys() if before.get(k) != found.get(k))
    for k in differ:
        print(f"DIFFERS {k}: {before.get(k)} -> {found.get(k)}")
    print(f"{len(found) - len(differ)} of {len(found)} sources identical")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
