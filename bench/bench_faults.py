"""Fault and load bench: break `codex materialize` as an operator would, rerun, and check nothing was lost.

    python bench/bench_faults.py --quick          # 2 datasets (narrative, civic_intelligence): a few minutes
    python bench/bench_faults.py                  # every sample dataset (about 4x longer)
    python bench/bench_faults.py --quick --json   # the same, then the table as JSON
    python bench/bench_faults.py --keep DIR       # keep the scratch folders under DIR

Everything runs in a scratch folder (never the checkout's ``data/``), each site with its own data dir
and ``$DAGSTER_HOME``, through the real CLI in subprocesses (``python -m codex_pipeline.cli
materialize DAY``, ``… search``, ``… query``) on the bundled sample landing days, with the real
local embedder (the CLI has no fake: ``$CODEX_TEST_EMBEDDER`` is read only by the tests' own
child scripts).

1. A **clean** site materializes the three sample days once: the reference.
2. A **fault** site takes these faults one after the other, each followed by a plain rerun of the
   day (``codex materialize DAY``): SIGKILL of the run while ``<ds>__chunks``, ``<ds>__embeddings``
   and ``<ds>__search_index`` run (timed on the run's Dagster event log: the kill lands right after
   the step's STEP_START; the table names the step that was running, read back from the event log);
   SIGTERM during ``<ds>__embeddings``; two runs of the same day at once; a run while a ``codex
   search`` loop runs; a truncated chunks Parquet file; a deleted search index (``codex search`` and
   ``codex query`` are run on the damaged site first: exit code, traceback or not). On sites of their
   own: a document landed again with an addendum, its run stopped (SIGTERM) in
   ``narrative__embeddings``: ``codex search`` must keep returning it (issue 29, item 1); and a full
   data disk (a 64 MB tmpfs in a user + mount namespace, 250 KB left; 60, 250 and 500 KB in the full
   run; skipped where ``unshare`` cannot do it), freed before the rerun.
3. A **load** site materializes the three days at once (three processes) while two ``codex query``
   loops and one ``codex search`` loop run: queries, searches, errors, empty searches.

After each fault (and after the load) the checks are:

- **open runs**: runs left STARTED / NOT_STARTED / STARTING / CANCELING in the Dagster instance
  (``DagsterInstance`` over the site's ``$DAGSTER_HOME``);
- **rerun == clean**: the day's chunk rows of every dataset (chunk_id, doc_id, section_id,
  chunk_text, evidence_anchor, seq_index, chunk_type, parent_chunk_id, locator; not timestamps)
  equal the clean site's;
- **offsets**: every chunk of every partition (``_history`` views joined with raw on doc_id and
  day): a verbatim chunk must be ``canonical_text[start:end]``; a composed one (``spans``) must hold
  each span's text in order;
- **documents lost**: landing files in neither raw nor rejects, documents of the clean day missing
  from the site's raw, and documents in raw that are neither current nor deleted;
- **duplicate ids**: ``count(*) - count(DISTINCT chunk_id)`` of every current chunks view.

A failed ``codex search`` / ``codex query`` of a loop also fails its row (``--dev --keep DIR`` keeps
its traceback). The last line reads ``faults: N, open runs 0, rerun != clean 0, offsets wrong 0/CHECKED, documents
lost 0; load: Q queries, S searches, E errors, D duplicate ids``. Exit status 1 when any check failed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from codex_pipeline.datasets.sample_data import sample_days, sample_root  # noqa: E402
from codex_pipeline.warehouse.atomic_files import TEMP_SUFFIX  # noqa: E402
from codex_pipeline.warehouse.catalog import connect_catalog  # noqa: E402
from codex_pipeline.warehouse.storage import Warehouse  # noqa: E402

QUICK_DATASETS = ("narrative", "civic_intelligence")
FAULT_DATASET = "civic_intelligence"  # the sample's longest chunks and embeddings steps (about 2 s each)
SEARCHES = ("water main replacement", "library board meeting", "zoning hearing", "council agenda budget",
            "permit", "public notice comment period")
QUERIES = ("SELECT count(*) FROM codex.{ds}_chunks",
           "SELECT doc_id, count(*) FROM codex.{ds}_chunks GROUP BY doc_id ORDER BY doc_id",
           "SELECT count(*) - count(DISTINCT chunk_id) FROM codex.{ds}_chunks")
CHUNK_COLUMNS = "chunk_id, doc_id, section_id, chunk_text, evidence_anchor, seq_index, chunk_type, parent_chunk_id, locator"
OPEN_STATUSES = ("STARTED", "NOT_STARTED", "STARTING", "CANCELING", "QUEUED")
STEP_TIMEOUT_S = 240.0


# --------------------------------------------------------------------------- sites


@dataclass
class Site:
    """One data dir and one ``$DAGSTER_HOME`` with the sample landing days of some datasets."""

    root: Path
    datasets: Sequence[str]
    dev: bool = False  # run the CLI under ``python -X dev``: tracebacks instead of one-line errors, to diagnose

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def home(self) -> Path:
        return self.root / "dagster_home"

    def setup(self) -> Site:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        for ds in self.datasets:
            for day in sorted(p for p in (sample_root() / ds).iterdir() if p.is_dir()):
                shutil.copytree(day, self.data / "landing" / ds / day.name, dirs_exist_ok=True)
        return self

    def env(self) -> dict[str, str]:
        env = dict(os.environ, CODEX_DATA_DIR=str(self.data), DAGSTER_HOME=str(self.home), PYTHONUNBUFFERED="1")
        env.pop("CODEX_MAPPINGS_DIR", None)
        return env

    def codex(self, *args: str, timeout: float = STEP_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.python(), "-m", "codex_pipeline.cli", *args], env=self.env(), cwd=self.root,
                              capture_output=True, text=True, timeout=timeout)

    def python(self) -> list[str]:
        return [sys.executable, "-X", "dev"] if self.dev else [sys.executable]

    def start(self, log: str, *args: str) -> subprocess.Popen[bytes]:
        """A backgrounded ``codex`` in a session of its own (so a kill reaches it and only it)."""
        out = open(self.root / log, "wb")  # noqa: SIM115 - closed with the process
        return subprocess.Popen([*self.python(), "-m", "codex_pipeline.cli", *args], env=self.env(), cwd=self.root,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def materialize(self, *days: str) -> int:
        proc = self.codex("materialize", *days, timeout=STEP_TIMEOUT_S * len(days))
        if proc.returncode != 0:
            print(f"  materialize {' '.join(days)} exited {proc.returncode}: {_last_line(proc.stderr or proc.stdout)}")
        return proc.returncode

    def run_dbs(self) -> set[Path]:
        return set((self.home / "history" / "runs").glob("*-*.db"))


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def _traceback(text: str) -> bool:
    return "Traceback (most recent call last)" in text


# --------------------------------------------------------------------------- the run's event log


def _step_events(db: Path) -> list[tuple[str, str]]:
    """(event type, step key) of the run's step starts and ends, in order; [] while the file is not ready."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.5)
        try:
            return con.execute(
                "SELECT dagster_event_type, step_key FROM event_logs WHERE dagster_event_type IN "
                "('STEP_START', 'STEP_SUCCESS', 'STEP_FAILURE') ORDER BY id").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return []


def _open_steps(events: list[tuple[str, str]]) -> list[str]:
    """Steps with a STEP_START and no end event: what is running."""
    running: dict[str, None] = {}
    for kind, step in events:
        if kind == "STEP_START":
            running[step] = None
        else:
            running.pop(step, None)
    return list(running)


def kill_during(site: Site, day: str, step: str, sig: signal.Signals) -> tuple[str, int]:
    """Start ``codex materialize DAY``, send ``sig`` as soon as ``step`` starts.

    Returns the steps running when the signal was sent, each with the event that ended it in the
    run's log afterwards (``no end event`` after a SIGKILL, ``STEP_FAILURE`` after a SIGTERM
    that interrupted it), and the process's exit code.
    """
    before = site.run_dbs()
    proc = site.start(f"kill-{step}-{sig.name}.log", "materialize", day)
    deadline = time.monotonic() + STEP_TIMEOUT_S
    db: Path | None = None
    sent = False
    at_signal: list[str] = []
    while proc.poll() is None and time.monotonic() < deadline:
        if db is None:
            new = site.run_dbs() - before
            db = next(iter(new), None)
        events = _step_events(db) if db is not None else []
        if any(k == "STEP_START" and s == step for k, s in events):
            os.killpg(proc.pid, sig)
            sent = True
            at_signal = _open_steps(events)
            break
        time.sleep(0.01)
    try:
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:  # SIGTERM not honoured in 2 minutes: that is a finding, then clean up
        os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait()
        return "did not stop on " + sig.name, code
    if not sent:
        return f"run ended before {step} started", code
    ends = {s: k for k, s in (_step_events(db) if db is not None else []) if k != "STEP_START"}
    running = ", ".join(f"{s} (then {ends.get(s, 'no end event')})" for s in at_signal)
    return running or "no step (between steps)", code


# --------------------------------------------------------------------------- checks


def open_runs(home: Path) -> list[str]:
    """Runs of the instance in a not-finished status, as ``status:run_id[:8]``."""
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        runs = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus[s] for s in OPEN_STATUSES]))
        return [f"{r.status.value}:{r.run_id[:8]}" for r in runs]


@contextlib.contextmanager
def catalog(site: Site) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect_catalog(Warehouse(site.data), read_only=True)
    try:
        yield con
    finally:
        con.close()


def _views(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'codex'").fetchall()}


def _history(views: set[str], ds: str, table: str) -> str | None:
    for name in (f"{ds}_{table}_history", f"{ds}_{table}"):
        if name in views:
            return f"codex.{name}"
    return None


def chunk_rows(site: Site, day: str) -> dict[str, list[tuple[object, ...]]]:
    """Per dataset, the day's chunk rows without timestamps, sorted."""
    out: dict[str, list[tuple[object, ...]]] = {}
    with catalog(site) as con:
        views = _views(con)
        for ds in site.datasets:
            view = _history(views, ds, "chunks")
            if view is None:
                out[ds] = []
                continue
            out[ds] = con.execute(f"SELECT {CHUNK_COLUMNS} FROM {view} WHERE partition_date = ? ORDER BY chunk_id, "
                                  "chunk_text", [dt.date.fromisoformat(day)]).fetchall()
    return out


def _spans(anchor: str) -> list[tuple[int, int]] | None:
    try:
        a = json.loads(anchor)
        return [(int(s), int(e)) for s, e in (a.get("spans") or [a["char_span"]])]
    except (TypeError, ValueError, KeyError):
        return None


def _offset_ok(text: str | None, chunk: str, anchor: str) -> bool:
    """As ``codex validate``'s offsets check: verbatim chunks exactly, composed chunks span by span in order."""
    spans = _spans(anchor)
    if text is None or spans is None or any(not 0 <= s <= e <= len(text) for s, e in spans):
        return False
    if len(spans) == 1:
        s, e = spans[0]
        return text[s:e] == chunk
    pos = 0
    for s, e in spans:
        found = chunk.find(text[s:e].strip(), pos)
        if found < 0:
            return False
        pos = found
    return True


@dataclass
class Checks:
    open_runs: list[str] = field(default_factory=list)
    rerun_differs: list[str] = field(default_factory=list)  # "ds: N rows differ"
    offsets_checked: int = 0
    offsets_wrong: int = 0
    wrong_examples: list[str] = field(default_factory=list)
    documents_lost: int = 0
    lost_examples: list[str] = field(default_factory=list)
    duplicate_ids: int = 0
    temp_files: int = 0
    search_misses: list[str] = field(default_factory=list)  # a current document codex search did not return
    reader_errors: list[str] = field(default_factory=list)  # a codex search / query of a loop that failed

    @property
    def ok(self) -> bool:
        return not (self.open_runs or self.rerun_differs or self.offsets_wrong or self.documents_lost
                    or self.duplicate_ids or self.search_misses or self.reader_errors)


def _landing_files(site: Site, ds: str, days: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for day in days:
        folder = site.data / "landing" / ds / day
        if folder.is_dir():
            out += [(day, p.relative_to(folder).as_posix()) for p in folder.rglob("*") if p.is_file()]
    return out


def check(site: Site, days: Sequence[str], clean: Site | None) -> Checks:
    """Every check above, for ``days`` of ``site`` (compared with ``clean`` when given)."""
    c = Checks(open_runs=open_runs(site.home))
    if clean is not None:
        for day in days:
            mine, ref = chunk_rows(site, day), chunk_rows(clean, day)
            for ds in site.datasets:
                diff = len(set(mine[ds]) ^ set(ref[ds])) + abs(len(mine[ds]) - len(ref[ds]))
                if diff:
                    c.rerun_differs.append(f"{ds} {day}: {diff} rows differ ({len(mine[ds])} vs clean {len(ref[ds])})")
    with catalog(site) as con:
        views = _views(con)
        for ds in site.datasets:
            _check_dataset(c, con, views, ds, site, days, clean)
    c.temp_files = sum(1 for p in (site.data / "warehouse").rglob(f"*{TEMP_SUFFIX}"))
    return c


def _check_dataset(c: Checks, con: duckdb.DuckDBPyConnection, views: set[str], ds: str, site: Site,
                   days: Sequence[str], clean: Site | None) -> None:
    raw, chunks = _history(views, ds, "raw"), _history(views, ds, "chunks")
    texts: dict[tuple[str, dt.date], str] = {}
    if raw:
        texts = {(d, p): t for d, p, t in con.execute(f"SELECT doc_id, partition_date, canonical_text FROM {raw}").fetchall()}
    if chunks:
        for doc, day, cid, text, anchor in con.execute(
                f"SELECT doc_id, partition_date, chunk_id, chunk_text, evidence_anchor FROM {chunks}").fetchall():
            c.offsets_checked += 1
            if not _offset_ok(texts.get((doc, day)), text, anchor):
                c.offsets_wrong += 1
                if len(c.wrong_examples) < 5:
                    c.wrong_examples.append(f"{ds} {day} {cid} {anchor[:80]}")
        if f"{ds}_chunks" in views:
            c.duplicate_ids += con.execute(
                f"SELECT count(*) - count(DISTINCT chunk_id) FROM codex.{ds}_chunks").fetchone()[0]  # type: ignore[index]
    seen: set[tuple[str, str]] = set()
    if raw:
        seen |= {(str(d), f) for d, f in con.execute(f"SELECT DISTINCT partition_date, source_file FROM {raw}").fetchall()}
    if f"{ds}_rejects" in views:
        seen |= {(str(d), f) for d, f in con.execute(
            f"SELECT DISTINCT partition_date, source_file FROM codex.{ds}_rejects").fetchall()}
    for day, name in _landing_files(site, ds, days):
        if (day, name) not in seen:
            _lost(c, f"{ds} {day}/{name}: landed, in neither raw nor rejects")
    if raw and f"{ds}_raw_history" in views and f"{ds}_documents" in views:
        for (doc,) in con.execute(
                f"SELECT DISTINCT doc_id FROM {raw} WHERE doc_id NOT IN (SELECT doc_id FROM codex.{ds}_raw) "
                f"AND doc_id NOT IN (SELECT doc_id FROM codex.{ds}_documents WHERE deleted_on IS NOT NULL)").fetchall():
            _lost(c, f"{ds} {doc}: in raw history, neither current nor deleted")
    if clean is not None and raw:
        mine = {d for (d,) in con.execute(f"SELECT DISTINCT doc_id FROM {raw}").fetchall()}
        with catalog(clean) as ref:
            ref_raw = _history(_views(ref), ds, "raw")
            theirs = {d for (d,) in ref.execute(
                f"SELECT DISTINCT doc_id FROM {ref_raw} WHERE partition_date IN ({','.join('?' * len(days))})",
                [dt.date.fromisoformat(d) for d in days]).fetchall()} if ref_raw else set()
        for doc in sorted(theirs - mine):
            _lost(c, f"{ds} {doc}: in the clean run, not in this site's raw")


def _lost(c: Checks, what: str) -> None:
    c.documents_lost += 1
    if len(c.lost_examples) < 5:
        c.lost_examples.append(what)


# --------------------------------------------------------------------------- loops


@dataclass
class Loop:
    """A ``codex`` command run again and again until stopped: runs, errors, empty answers, tracebacks."""

    site: Site
    kind: str  # "search" or "query"
    runs: int = 0
    errors: int = 0
    empty: int = 0
    tracebacks: int = 0
    error_lines: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _args(self, i: int) -> list[str]:
        if self.kind == "search":
            return ["search", SEARCHES[i % len(SEARCHES)], "-k", "5", "--json"]
        ds = self.site.datasets[i % len(self.site.datasets)]
        return ["query", QUERIES[(i // len(self.site.datasets)) % len(QUERIES)].format(ds=ds)]

    def _loop(self) -> None:
        i = 0
        while not self.stop.is_set():
            proc = self.site.codex(*self._args(i), timeout=120)
            i += 1
            self.runs += 1
            self.tracebacks += _traceback(proc.stderr)
            if proc.returncode != 0:
                self.errors += 1
                (self.site.root / f"{self.kind}-error-{self.errors}.txt").write_text(
                    f"$ codex {' '.join(self._args(i - 1))}\n{proc.stderr}")  # kept with --keep
                if len(self.error_lines) < 3:
                    self.error_lines.append(_last_line(proc.stderr))
            elif self.kind == "search" and proc.stdout.strip() in ("", "[]"):
                self.empty += 1

    def __enter__(self) -> Loop:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


# --------------------------------------------------------------------------- faults


@dataclass
class FaultResult:
    fault: str
    day: str
    detail: str  # the step running at the kill, exit codes, what the damaged site answered
    checks: Checks
    seconds: float

    def row(self) -> dict[str, object]:
        return {"fault": self.fault, "day": self.day, "detail": self.detail, "seconds": round(self.seconds, 1),
                **asdict(self.checks), "ok": self.checks.ok}


def _damaged(site: Site) -> str:
    """What ``codex search`` (as it is, then with ``--no-refresh``: the index as it is) and ``codex query``
    answer on a damaged site: exit codes, hits, traceback, the last line of stderr."""
    out = []
    for name, args in (("search --no-refresh", ["search", SEARCHES[0], "-k", "5", "--json", "--no-refresh"]),
                       ("search", ["search", SEARCHES[0], "-k", "5", "--json"]),
                       ("query", ["query", f"SELECT count(*) FROM codex.{FAULT_DATASET}_chunks"])):
        proc = site.codex(*args, timeout=120)
        hits = ""
        if name.startswith("search") and proc.returncode == 0:
            with contextlib.suppress(ValueError):
                found = json.loads(proc.stdout)
                hits = f", {len(found)} hits ({sum(h['dataset'] == FAULT_DATASET for h in found)} {FAULT_DATASET})"
        tb = " TRACEBACK" if _traceback(proc.stderr) else ""
        said = [ln for ln in proc.stderr.splitlines() if "warning" in ln or "error" in ln or ln.startswith("codex")]
        said = [ln for ln in said if " hit(s) in " not in ln]
        warn = f" [{' | '.join(ln[:200] for ln in said)}]" if said else ""
        out.append(f"{name} exit {proc.returncode}{hits}{tb}{warn}")
    return "; ".join(out)


def run_faults(site: Site, clean: Site, days: Sequence[str], fault_names: set[str] | None) -> list[FaultResult]:
    d1, d2, d3 = days[0], days[1 % len(days)], days[2 % len(days)]
    ds = FAULT_DATASET
    results: list[FaultResult] = []

    reader_errors: list[str] = []  # what a loop of a fault saw fail, for that fault's checks

    def fault(name: str, day: str, act: Callable[[str], str], first_run: bool = False) -> None:
        """``act`` breaks the day (on its first run, or on a site that has it), then a rerun and the checks."""
        if fault_names and name not in fault_names:
            return
        t0 = time.perf_counter()
        print(f"fault {name} on {day} ...", flush=True)
        if not first_run and day not in done:  # with --only: the fault needs the day materialized once
            site.materialize(day)
        detail = act(day)
        rerun = site.materialize(day)
        done.add(day)
        detail += f"; rerun exit {rerun}"
        checks = check(site, sorted(done), clean)
        checks.reader_errors, reader_errors[:] = list(reader_errors), []
        results.append(FaultResult(name, day, detail, checks, time.perf_counter() - t0))
        print(f"  {detail}\n  {'ok' if checks.ok else 'FAILED'}: {_summary(checks)}", flush=True)

    done: set[str] = set()  # days rerun on this site so far: the ones checked

    def kill(step: str, sig: signal.Signals) -> Callable[[str], str]:
        def act(day: str) -> str:
            running, code = kill_during(site, day, f"{ds}__{step}", sig)
            return f"{sig.name} while {running} ran (exit {code}); runs open after the fault: {len(open_runs(site.home))}"
        return act

    def two_at_once(day: str) -> str:
        a, b = site.start("twin-a.log", "materialize", day), site.start("twin-b.log", "materialize", day)
        codes = (a.wait(timeout=STEP_TIMEOUT_S), b.wait(timeout=STEP_TIMEOUT_S))
        tails = [_last_line((site.root / n).read_text(errors="replace")) for n in ("twin-a.log", "twin-b.log")]
        tb = sum(_traceback((site.root / n).read_text(errors="replace")) for n in ("twin-a.log", "twin-b.log"))
        return f"exit codes {codes[0]}, {codes[1]} ({tb} tracebacks; last lines: {' | '.join(tails)})"

    def with_searches(day: str) -> str:
        with Loop(site, "search") as loop:
            code = site.materialize(day)
        reader_errors.extend(f"search during the run: {ln}" for ln in loop.error_lines)
        if loop.errors > len(loop.error_lines):
            reader_errors.append(f"search during the run: {loop.errors} errors in all")
        return (f"run exit {code}; {loop.runs} searches, {loop.errors} errors, {loop.empty} empty, "
                f"{loop.tracebacks} tracebacks{(': ' + ' | '.join(loop.error_lines)) if loop.error_lines else ''}")

    def truncated_chunks(day: str) -> str:
        path = Warehouse(site.data).partition_path(ds, "chunks", dt.date.fromisoformat(day))
        size = path.stat().st_size
        with open(path, "r+b") as f:
            f.truncate(size // 2)
        return f"{path.name} cut from {size} to {size // 2} bytes; {_damaged(site)}"

    def deleted_index(day: str) -> str:
        folder = Warehouse(site.data).table_dir(ds, "search_index")
        shutil.rmtree(folder)
        return f"removed {folder.relative_to(site.data)}; {_damaged(site)}"

    fault("SIGKILL in chunks", d1, kill("chunks", signal.SIGKILL), first_run=True)
    fault("SIGKILL in embeddings", d2, kill("embeddings", signal.SIGKILL), first_run=True)
    fault("SIGKILL in search_index", d3, kill("search_index", signal.SIGKILL), first_run=True)
    fault("SIGTERM in embeddings", d1, kill("embeddings", signal.SIGTERM))
    fault("two runs of one day at once", d2, two_at_once)
    fault("materialize while searching", d3, with_searches)
    fault("truncated chunks file", d1, truncated_chunks)
    fault("deleted search index", d2, deleted_index)
    return results


FULL_DISK_SCRIPT = r"""
set -u
mount -t tmpfs -o size=64m tmpfs "$DATA" || exit 97
cp -a "$STAGE/." "$DATA/"
avail=$(df -k --output=avail "$DATA" | tail -1)
dd if=/dev/zero of="$DATA/.filler" bs=1K count=$((avail - FREE_KB)) status=none 2>/dev/null
df -k --output=avail "$DATA" | tail -1 > "$OUT/free_kb"
"$PY" -m codex_pipeline.cli materialize "$DAY" > "$OUT/fault.out" 2> "$OUT/fault.err"; echo $? > "$OUT/fault.rc"
rm -f "$DATA/.filler"
"$PY" -m codex_pipeline.cli materialize "$DAY" > "$OUT/rerun.out" 2> "$OUT/rerun.err"; echo $? > "$OUT/rerun.rc"
cp -a "$DATA/." "$COPY/"
"""


def namespaces_work() -> bool:
    """Whether a tmpfs can be mounted in a user and mount namespace here (no root needed where allowed)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


def run_full_disk(site: Site, clean: Site, day: str, free_kb: int) -> FaultResult | None:
    """The data dir on a 64 MB tmpfs (in a private mount namespace) with ``free_kb`` left: a run, the
    disk freed, a rerun; the data dir is copied back out to its own path for the checks."""
    t0 = time.perf_counter()
    print(f"fault full data disk ({free_kb} KB free) on {day} ...", flush=True)
    stage, copy, out = site.root / "stage", site.root / "copy", site.root / "out"
    site.data.rename(stage)
    for d in (site.data, copy, out):
        d.mkdir()
    env = dict(site.env(), STAGE=str(stage), DATA=str(site.data), COPY=str(copy), OUT=str(out), DAY=day,
               FREE_KB=str(free_kb), PY=sys.executable)
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "bash", "-c", FULL_DISK_SCRIPT],
                          env=env, cwd=site.root, capture_output=True, text=True, timeout=STEP_TIMEOUT_S * 2)
    if proc.returncode == 97 or not (out / "rerun.rc").exists():
        print(f"  skipped: no tmpfs in a user namespace here ({_last_line(proc.stderr)})")
        return None
    site.data.rmdir()
    copy.rename(site.data)
    err = (out / "fault.err").read_text(errors="replace")
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("No dagster instance")]
    failed = sorted({ln.split(" - ")[6] for ln in lines if " - STEP_FAILURE - " in ln and ln.count(" - ") > 6})
    stack = " with Dagster's stack traces" if "Stack Trace:" in err else ""
    detail = (f"{(out / 'free_kb').read_text().strip()} KB free: run exit {(out / 'fault.rc').read_text().strip()}, "
              f"{len(lines)} stderr line(s){' TRACEBACK' if _traceback(err) else ''}{stack}, steps failed: "
              f"{', '.join(failed) or 'none'}, 'No space left on device' said: {'yes' if 'No space left' in err else 'NO'}; "
              f"runs open after the fault: {len(open_runs(site.home))}; "
              f"disk freed, rerun exit {(out / 'rerun.rc').read_text().strip()}")
    checks = check(site, [day], clean)
    print(f"  {detail}\n  {'ok' if checks.ok else 'FAILED'}: {_summary(checks)}", flush=True)
    return FaultResult(f"full data disk, {free_kb} KB free", day, detail, checks, time.perf_counter() - t0)


RELANDED = "library-board-meeting-summary.txt"
RELANDED_QUERY = "Eastbrook Public Library board of trustees regular meeting summary"


def _finds(site: Site, doc_id: str, *flags: str) -> str:
    """Whether ``codex search`` (with ``flags``) returns the document among its first 10 narrative hits."""
    proc = site.codex("search", RELANDED_QUERY, "-d", "narrative", "-k", "10", "--json", *flags, timeout=120)
    if proc.returncode != 0:
        return f"exit {proc.returncode}{' TRACEBACK' if _traceback(proc.stderr) else ''}: {_last_line(proc.stderr)}"
    try:
        hits = json.loads(proc.stdout)
    except ValueError:
        return "not JSON"
    return "found" if any(h["doc_id"] == doc_id for h in hits) else f"MISSING ({len(hits)} other hits)"


def run_relanded(site: Site, days: Sequence[str]) -> FaultResult:
    """Issue 29 item 1: a document landed again (with an addendum) on a later day, its run stopped in
    ``narrative__embeddings``: does ``codex search`` still return the document, before and after the rerun?"""
    t0 = time.perf_counter()
    d1, d2 = days[0], days[1]
    print(f"fault re-landed document, SIGTERM in narrative__embeddings on {d2} ...", flush=True)
    site.materialize(d1)
    text = (site.data / "landing" / "narrative" / d1 / RELANDED).read_text(encoding="utf-8")
    (site.data / "landing" / "narrative" / d2 / RELANDED).write_text(
        text + "\n\nADDENDUM\n\nThe Board corrected the date of its December meeting.\n", encoding="utf-8")
    doc_id = f"urn:aprs:narrative:{RELANDED}"
    before = _finds(site, doc_id, "--no-refresh")
    running, code = kill_during(site, d2, "narrative__embeddings", signal.SIGTERM)
    stopped = {"--no-refresh": _finds(site, doc_id, "--no-refresh"), "refreshing": _finds(site, doc_id)}
    rerun = site.materialize(d2)
    after = _finds(site, doc_id, "--no-refresh")
    checks = check(site, [d1, d2], None)
    misses = [f"{k} after the stop: {v}" for k, v in stopped.items() if v != "found"]
    misses += [f"after the rerun: {after}"] if after != "found" else []
    checks.search_misses = misses
    detail = (f"search before: {before}; SIGTERM while {running} ran (exit {code}); after the stop: search --no-refresh "
              f"{stopped['--no-refresh']}, search {stopped['refreshing']}; rerun exit {rerun}; after it: {after}")
    print(f"  {detail}\n  {'ok' if checks.ok else 'FAILED'}: {_summary(checks)}", flush=True)
    return FaultResult("re-landed doc, SIGTERM in embeddings", d2, detail, checks, time.perf_counter() - t0)


# --------------------------------------------------------------------------- load


@dataclass
class LoadResult:
    days: list[str]
    run_exit_codes: list[int]
    queries: int
    query_errors: int
    searches: int
    search_errors: int
    empty_searches: int
    tracebacks: int
    error_lines: list[str]
    checks: Checks
    seconds: float


def run_load(site: Site, clean: Site, days: Sequence[str], rounds: int) -> LoadResult:
    print(f"load: {len(days)} days at once ({rounds} round(s)), 2 query loops, 1 search loop ...", flush=True)
    t0 = time.perf_counter()
    site.materialize(days[0])  # the loops need views and an index to read; the other days land during the load
    codes: list[int] = []
    with Loop(site, "query") as q1, Loop(site, "query") as q2, Loop(site, "search") as s:
        for r in range(rounds):
            procs = [site.start(f"load-{r}-{d}.log", "materialize", d) for d in days]
            codes += [p.wait(timeout=STEP_TIMEOUT_S * 2) for p in procs]
    loops = (q1, q2, s)
    checks = check(site, days, clean)
    checks.reader_errors = [f"{lp.kind} during the load: {ln}" for lp in (q1, q2, s) for ln in lp.error_lines]
    result = LoadResult(list(days), codes, q1.runs + q2.runs, q1.errors + q2.errors, s.runs, s.errors, s.empty,
                        sum(lp.tracebacks for lp in loops), [ln for lp in loops for ln in lp.error_lines][:5],
                        checks, time.perf_counter() - t0)
    print(f"  runs exit {codes}; {result.queries} queries ({result.query_errors} errors), {result.searches} "
          f"searches ({result.search_errors} errors, {result.empty_searches} empty)\n  "
          f"{'ok' if checks.ok else 'FAILED'}: {_summary(checks)}", flush=True)
    return result


# --------------------------------------------------------------------------- report


def _summary(c: Checks) -> str:
    parts = [f"open runs {len(c.open_runs)}", f"rerun != clean {len(c.rerun_differs)}",
             f"offsets wrong {c.offsets_wrong}/{c.offsets_checked}", f"documents lost {c.documents_lost}",
             f"duplicate ids {c.duplicate_ids}", f"temp files {c.temp_files}", f"search misses {len(c.search_misses)}",
             f"reader errors {len(c.reader_errors)}"]
    extra = c.open_runs + c.rerun_differs + c.wrong_examples + c.lost_examples + c.search_misses + c.reader_errors
    return ", ".join(parts) + ("".join(f"\n    {e}" for e in extra) if extra else "")


def print_table(faults: list[FaultResult], load: LoadResult | None) -> None:
    head = ("fault", "day", "open runs", "rerun==clean", "offsets checked", "wrong", "docs lost", "dup ids", "s")
    rows = [(f.fault, f.day, str(len(f.checks.open_runs)), "yes" if not f.checks.rerun_differs else "NO",
             str(f.checks.offsets_checked), str(f.checks.offsets_wrong), str(f.checks.documents_lost),
             str(f.checks.duplicate_ids), f"{f.seconds:.0f}") for f in faults]
    if load:
        c = load.checks
        rows.append((f"load: {len(load.days)} days at once", ",".join(d[5:] for d in load.days), str(len(c.open_runs)),
                     "yes" if not c.rerun_differs else "NO", str(c.offsets_checked), str(c.offsets_wrong),
                     str(c.documents_lost), str(c.duplicate_ids), f"{load.seconds:.0f}"))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print()
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    print()
    for f in faults:
        print(f"- {f.fault} ({f.day}): {f.detail}")
    if load:
        print(f"- load: runs exit {load.run_exit_codes}; {load.queries} queries ({load.query_errors} errors), "
              f"{load.searches} searches ({load.search_errors} errors, {load.empty_searches} empty), "
              f"{load.tracebacks} tracebacks{(': ' + ' | '.join(load.error_lines)) if load.error_lines else ''}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_DATASETS)} (a few minutes)")
    p.add_argument("--json", action="store_true", help="print the results as JSON after the table")
    p.add_argument("--keep", type=Path, help="create the scratch sites under this folder and keep them")
    p.add_argument("--only", action="append", help="run only this fault (its name in the table; repeatable; 'load' for the load, 'relanded' for the "
                   "re-landed document, 'full disk' for the full data disk)")
    p.add_argument("--dev", action="store_true", help="run the CLI under `python -X dev` (tracebacks; with --keep, "
                   "failed searches and queries are kept as <site>/<kind>-error-N.txt)")
    p.add_argument("--load-rounds", type=int, help="times the 3 days are materialized at once under the load "
                   "(default 1 with --quick, else 3)")
    args = p.parse_args(argv)
    datasets = QUICK_DATASETS if args.quick else tuple(sorted(p.name for p in sample_root().iterdir() if p.is_dir()))
    days = sample_days()[:3]
    scratch = Path(tempfile.mkdtemp(prefix="codex-faults-", dir=args.keep)) if args.keep else \
        Path(tempfile.mkdtemp(prefix="codex-faults-"))
    print(f"scratch: {scratch}; datasets: {', '.join(datasets)}; days: {', '.join(days)}", flush=True)
    try:
        clean = Site(scratch / "clean", datasets, args.dev).setup()
        t0 = time.perf_counter()
        if clean.materialize(*days):
            print("the clean run failed: nothing to compare with")
            return 1
        print(f"clean: {len(days)} days in {time.perf_counter() - t0:.0f}s", flush=True)
        only = set(args.only or ())
        faults = run_faults(Site(scratch / "faults", datasets, args.dev).setup(), clean, days, only - {"load"} or None) \
            if only != {"load"} else []
        if not only or "relanded" in only:
            faults.append(run_relanded(Site(scratch / "relanded", datasets, args.dev).setup(), days))
        if (not only or "full disk" in only) and namespaces_work():
            for kb in (250,) if args.quick else (60, 250, 500):
                full = run_full_disk(Site(scratch / f"full-{kb}", datasets, args.dev).setup(), clean, days[0], kb)
                faults += [full] if full else []
        elif not only or "full disk" in only:
            print("full disk: skipped (needs unshare with user and mount namespaces)")
        load = run_load(Site(scratch / "load", datasets, args.dev).setup(), clean, days,
                        args.load_rounds or (1 if args.quick else 3)) if not only or "load" in only else None
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print_table(faults, load)
    checks = [f.checks for f in faults] + ([load.checks] if load else [])
    bad = (not all(c.ok for c in checks)) or bool(load and (load.query_errors or load.search_errors or load.tracebacks))
    print(f"\nfaults: {len(faults)}, open runs {sum(len(c.open_runs) for c in checks)}, "
          f"rerun != clean {sum(bool(c.rerun_differs) for c in checks)}, "
          f"offsets wrong {sum(c.offsets_wrong for c in checks)}/{sum(c.offsets_checked for c in checks)}, "
          f"documents lost {sum(c.documents_lost for c in checks)}"
          + (f"; load: {load.queries} queries, {load.searches} searches, "
             f"{load.query_errors + load.search_errors} errors, {load.checks.duplicate_ids} duplicate ids" if load else ""))
    if args.json:
        print(json.dumps({"datasets": list(datasets), "days": days, "faults": [f.row() for f in faults],
                          "load": asdict(load) if load else None}, indent=1, default=str))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
