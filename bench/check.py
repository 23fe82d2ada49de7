"""Instruction-count check of the chunk step's speed: fails when a bench got more than 5% slower.

What it compares. Each bench runs once under ``valgrind --tool=callgrind`` in a process of
its own and does two things there, one after the other, on the same texts: the measured
work, and tiktoken's ``encode_ordinary`` of those texts (the floor every chunker is
compared with). Markers (calls to ``os.getppid``, on which callgrind dumps its counters)
split the process's instructions into start-up, warm-up, the reference and the work. The
figure is the ratio ``work instructions / encode_ordinary instructions``; it is compared
with the ratio recorded for the same bench and corpus in ``bench/baseline.json``, and a
rise of more than 5% (``--tolerance``) fails the check: exit 1, one line per bench.

Ratios rather than raw counts, so another Python patch level or tiktoken build moves the
recorded figures less; instructions rather than seconds, so a busy machine does not move
them at all. (tiktoken's hash map is seeded per process, which moves a ratio by well under
1%: the work encodes the same texts as the reference.)

Benches:

- ``fallback``: the narrative dataset's chunk step (``datasets.steps.chunk``: the token-window
  fallback into full contract rows), on the prose (``*.md``, ``*.txt``, ``*.mbox``) of a corpus.
- ``markdown``: the docs dataset's chunk step (``datasets.steps.chunk``) on documents the
  Markdown reader loaded (as ``instructions_markdown.py``).

Both chunk documents as the pipeline does: read back from a ``raw`` table (``steps.ingest``
then ``steps.documents_from_raw``, before the measured region), so they carry the revision
digest computed at ingest and the chunk step does not normalize them again.
- ``contract``: the chunk contract check (``validate_chunks``) of a chunked partition of
  corpus paragraphs (as ``bench_contract_check.py``, 1 MB), against the partition's encode.

Corpora: the shared corpora beside the checkout (``../shared/corpora``: prose, httpx and uv
docs) when present, and always the samples bundled in the package
(``codex_pipeline/sample_landing``), so a checkout without the shared folder still checks
something. A corpus that is absent is skipped with a message; figures are recorded per
(bench, corpus).

    python bench/check.py                 # compare with bench/baseline.json (about 3-4 minutes)
    python bench/check.py --update        # re-record the figures on purpose
    python bench/check.py --only markdown --corpus httpx
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BASELINE = Path(__file__).resolve().parent / "baseline.json"
SHARED = REPO.parent / "shared" / "corpora"
SAMPLES = REPO / "codex_pipeline" / "sample_landing"
TOLERANCE = 0.05
MARKER = "os_getppid"  # the C function behind os.getppid(): callgrind dumps its counters on entry
DAY = dt.date(2026, 11, 24)


@dataclass(frozen=True)
class Case:
    bench: str
    corpus: str
    paths: tuple[Path, ...]  # what the child loads; every one must exist

    @property
    def key(self) -> str:
        return f"{self.bench}[{self.corpus}]"


def cases() -> list[Case]:
    """Every (bench, corpus) pair this checkout can run, in a fixed order; absent corpora are left out."""
    docs_days = tuple(sorted(p for p in (SAMPLES / "docs").iterdir() if p.is_dir()))
    out = [
        Case("fallback", "corpora", (SHARED,)),
        Case("fallback", "samples", (SAMPLES,)),
        Case("markdown", "httpx", (SHARED / "markdown" / "httpx",)),
        Case("markdown", "uv", (SHARED / "markdown" / "uv",)),
        Case("markdown", "samples", docs_days),
        Case("contract", "corpora", (SHARED,)),
        Case("contract", "samples", (SAMPLES,)),
    ]
    return out


# --- the child: one process per case, under callgrind ------------------------------------


def prose_texts(folders: Sequence[Path]) -> list[tuple[str, str]]:
    """(name, text) of every ``*.md``, ``*.txt`` and ``*.mbox`` below the folders (as bench_fallback)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_contract_check import prose_files

    out = []
    for folder in folders:
        files = prose_files(folder)
        out += [(p.relative_to(folder).as_posix(), p.read_text(encoding="utf-8", errors="replace")) for p in files]
    return out


def _from_raw(dataset: str, docs: Sequence[Any]) -> list[Any]:
    """The documents as the chunk step gets them in the pipeline: ingested into a ``raw`` table
    (which stores each revision digest) and read back. Done before the measured region."""
    from codex_pipeline.datasets import steps
    from codex_pipeline.datasets.registry import get_dataset

    return steps.documents_from_raw(steps.ingest(get_dataset(dataset), DAY, list(docs), []).table)


def _fallback(paths: Sequence[Path]) -> tuple[list[str], Callable[[int], object]]:
    from codex_pipeline.core.documents import SourceDocument
    from codex_pipeline.datasets import steps
    from codex_pipeline.datasets.registry import get_dataset

    docs = [d for folder in paths for d in _from_raw(  # one raw table per folder, as one per day
        "narrative", [SourceDocument(f"urn:aprs:narrative:{name}", name, text, name) for name, text in prose_texts([folder])])]
    spec = get_dataset("narrative")
    stamp = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)
    return [d.text for d in docs], lambda limit: steps.chunk(spec, DAY, docs[:limit], stamp)


def _markdown(paths: Sequence[Path]) -> tuple[list[str], Callable[[int], object]]:
    from codex_pipeline.datasets import steps
    from codex_pipeline.datasets.registry import get_dataset
    from codex_pipeline.sources.markdown import load_docs_day

    docs = [d for folder in paths for d in _from_raw("docs", load_docs_day(folder).documents)]  # a raw table per day
    spec = get_dataset("docs")
    stamp = dt.datetime(2026, 11, 24, tzinfo=dt.UTC)
    return [d.text for d in docs], lambda limit: steps.chunk(spec, DAY, docs[:limit], stamp)


def _contract(paths: Sequence[Path]) -> tuple[list[str], Callable[[int], object]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_contract_check as bcc

    from codex_pipeline.core.contract_check import validate_chunks
    from codex_pipeline.datasets import steps
    from codex_pipeline.datasets.registry import get_dataset

    docs = bcc.partition(paths[0], 1.0)
    texts = {d.doc_id: d.text for d in docs}
    table = steps.chunk(get_dataset("narrative"), DAY, docs).table
    ids = table.column("doc_id").to_pylist()
    tables = {}

    def work(limit: int) -> object:
        if limit not in tables:  # the warm-up's slice is cut before measuring, the whole table is the table
            keep = {d.doc_id for d in docs[:limit]}
            tables[limit] = table if limit >= len(docs) else table.filter([i in keep for i in ids])
        return validate_chunks(tables[limit], texts)

    return [d.text for d in docs], work


SETUPS = {"fallback": _fallback, "markdown": _markdown, "contract": _contract}


def child(bench: str, paths: Sequence[Path]) -> None:
    """Warm up on a few texts, then: marker, encode_ordinary of all texts, marker, the work, marker."""
    from codex_pipeline.core.tokens import encoding

    texts, work = SETUPS[bench](paths)
    enc = encoding()
    warm = max(1, min(len(texts), 3))
    work(warm)  # lazy tables, compiled regexes, first-call caches
    [enc.encode_ordinary(t) for t in texts[:warm]]
    mark = os.getppid
    mark()
    [enc.encode_ordinary(t) for t in texts]
    mark()
    work(len(texts))
    mark()
    print(json.dumps({"texts": len(texts), "bytes": sum(len(t.encode()) for t in texts)}))


# --- the parent ---------------------------------------------------------------------------


def measure(case: Case, python: str = sys.executable) -> dict[str, Any]:
    """Run the case's child under callgrind; its encode and work instructions and their ratio."""
    with tempfile.TemporaryDirectory(prefix="codex-check-") as tmp:
        out_file = Path(tmp) / "cg.out"
        env = dict(os.environ, PYTHONHASHSEED="0")
        cmd = ["valgrind", "--tool=callgrind", f"--dump-before={MARKER}", f"--callgrind-out-file={out_file}",
               python, str(Path(__file__).resolve()), "--child", case.bench, *map(str, case.paths)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
        if proc.returncode != 0:
            raise RuntimeError(f"{case.key}: the child failed:\n{proc.stderr[-3000:]}")
        parts = sorted(_parts(Path(tmp)).items())
    if len(parts) != 4:  # start-up and warm-up, encode, work, exit
        raise RuntimeError(f"{case.key}: callgrind wrote {len(parts)} parts, not 4: is {MARKER} a symbol of this "
                           f"Python (a stripped build has none)?")
    ref, work = parts[1][1], parts[2][1]
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"ratio": round(work / ref, 4), "encode_ordinary": ref, "work": work, **info}


def _parts(folder: Path) -> dict[int, int]:
    out = {}
    for f in folder.iterdir():
        head = f.read_text(errors="replace")[:4000]
        part = re.search(r"^part: (\d+)", head, re.M)
        total = re.search(r"^(?:summary|totals): (\d+)", f.read_text(errors="replace"), re.M)
        if part and total:
            out[int(part.group(1))] = int(total.group(1))
    return out


def compare(recorded: dict[str, dict[str, Any]], found: dict[str, dict[str, Any]],
            tolerance: float = TOLERANCE) -> list[str]:
    """One line per case whose ratio rose more than ``tolerance`` over the recorded one."""
    lines = []
    for key, now in found.items():
        then = recorded.get(key)
        if then is None:
            continue
        old, new = float(then["ratio"]), float(now["ratio"])
        rise = new / old - 1
        if rise > tolerance:
            lines.append(f"SLOWER {key}: recorded ratio {old:.3f}, now {new:.3f} (+{rise:.1%}, more than {tolerance:.0%})")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--update", action="store_true", help="record the figures measured now in bench/baseline.json")
    ap.add_argument("--only", nargs="+", choices=sorted(SETUPS), help="benches to run (default: all)")
    ap.add_argument("--corpus", nargs="+", help="corpora to run (default: every one present)")
    ap.add_argument("--tolerance", type=float, default=TOLERANCE, help="allowed rise of a ratio (default 0.05)")
    ap.add_argument("--jobs", type=int, default=2, help="cases measured at the same time (default 2)")
    ap.add_argument("--baseline", type=Path, default=BASELINE)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], [Path(p) for p in args.child[1:]])
        return 0
    if shutil.which("valgrind") is None:
        print("check.py: valgrind not found (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    todo = []
    for case in cases():
        if args.only and case.bench not in args.only or args.corpus and case.corpus not in args.corpus:
            continue
        missing = [p for p in case.paths if not p.exists()]
        if missing or not case.paths:
            print(f"skip {case.key}: corpus not found ({', '.join(map(str, missing)) or 'empty'})")
            continue
        todo.append(case)
    recorded = json.loads(args.baseline.read_text())["ratios"] if args.baseline.exists() else {}
    t0 = time.monotonic()
    found: dict[str, dict[str, Any]] = {}
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for case, result in zip(todo, pool.map(measure, todo)):
            found[case.key] = result
            then = recorded.get(case.key)
            was = f"recorded {float(then['ratio']):.3f}" if then else "nothing recorded"
            print(f"{case.key}: {result['ratio']:.3f} x encode_ordinary ({result['work'] / 1e6:.1f} M / "
                  f"{result['encode_ordinary'] / 1e6:.1f} M instructions, {result['texts']} texts, "
                  f"{result['bytes'] / 1e6:.2f} MB; {was})", flush=True)
    print(f"check.py: {len(found)} benches in {time.monotonic() - t0:.0f} s")
    if args.update:
        merged = {**recorded, **found}
        args.baseline.write_text(json.dumps({
            "about": "bench/check.py: callgrind instructions of each bench / encode_ordinary of the same texts, "
                     "per (bench, corpus); re-record with python bench/check.py --update",
            "python": sys.version.split()[0],
            "ratios": dict(sorted(merged.items())),
        }, indent=1) + "\n")
        print(f"recorded {len(found)} figures in {args.baseline}")
        return 0
    failures = compare(recorded, found, args.tolerance)
    for line in failures:
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
