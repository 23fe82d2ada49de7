"""Benchmark: the current views against the history views at a year of daily partitions.

    python bench/bench_current.py [--days 365] [--chunks-per-day 2000] [--data-dir DIR] [--keep]

Synthesizes one dataset's Parquet partitions directly (no chunker, no model): every
day ``--chunks-per-day`` chunks of ``--docs-per-day`` documents (a parent chunk and
its children), a quarter of them re-landings of earlier documents, a few retracted
by tombstones, and an embeddings partition with a 384-d vector per chunk. The
document index is maintained by the real :func:`codex_pipeline.warehouse.current.update_index`,
one call per day, as the Dagster assets do (its cost at the last day is reported, and
so is the cost of the ``current_chunk_ids_unique`` asset check at that size).

Then times, on the real DuckDB catalog, each query on the current views and the same
query on the ``_history`` views:

* point lookup: ``SELECT * FROM codex.<ds>_chunks WHERE chunk_id = ?``
* the seed's parent-child SQL (``warehouse.queries.EXAMPLE_SQL``)
* ``codex search``'s SQL (``warehouse.queries.SEARCH_SQL``), top 10 by cosine

cold (the first run on a fresh connection: no DuckDB buffers or metadata cached; the
OS page cache is whatever the machine has) and warm (the same query again on that
connection), current and history interleaved, medians over ``--repeat`` rounds so a
busy machine weighs on both alike; prints current / history ratios. Target: ≤ 1.2.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from codex_pipeline.core.contract import CHUNK_SCHEMA
from codex_pipeline.core.ids import make_chunk_id, make_doc_id
from codex_pipeline.warehouse.catalog import connect_catalog, ensure_views
from codex_pipeline.warehouse.current import check_unique_chunk_ids, update_index
from codex_pipeline.warehouse.queries import EXAMPLE_SQL, SEARCH_SQL, history_suffix
from codex_pipeline.warehouse.storage import Warehouse

DATASET = "bench"
MODEL, VERSION, DIMS = "bench-model", "1", 384
START = dt.date(2025, 1, 1)
WORDS = np.array([f"w{i:04d}" for i in range(4000)])


def _sha(texts: list[str]) -> list[str]:
    return [hashlib.sha256(t.encode()).hexdigest() for t in texts]


class Corpus:
    """The synthetic landings: which documents land each day, and their text."""

    def __init__(self, seed: int, docs_per_day: int, chunks_per_doc: int, relanded: float, deleted: float) -> None:
        self.rng = np.random.default_rng(seed)
        self.docs_per_day, self.per_doc = docs_per_day, chunks_per_doc
        self.relanded, self.deleted = relanded, deleted
        self.known: list[str] = []
        # one long run of random words; each chunk's text is a slice of it
        self.text = " ".join(WORDS[self.rng.integers(0, len(WORDS), 400_000)])

    def day(self, i: int) -> tuple[list[str], list[str]]:
        """(record ids landing on day i, record ids tombstoned on day i)."""
        n_old = int(self.docs_per_day * self.relanded) if self.known else 0
        old = [self.known[k] for k in self.rng.choice(len(self.known), n_old, replace=False)] if n_old else []
        new = [f"d{len(self.known) + k:07d}" for k in range(self.docs_per_day - n_old)]
        self.known += new
        n_del = int(self.docs_per_day * self.deleted) if i else 0
        gone = set(old) | set(new)
        pool = [r for r in self.known[-20 * self.docs_per_day :] if r not in gone]
        dead = [pool[k] for k in self.rng.choice(len(pool), min(n_del, len(pool)), replace=False)] if pool else []
        return old + new, dead

    def chunks(self, day: dt.date, records: list[str]) -> pa.Table:
        n = len(records) * self.per_doc
        starts = self.rng.integers(0, len(self.text) - 2000, n)
        lengths = self.rng.integers(900, 1800, n)
        texts = [self.text[s : s + ln] for s, ln in zip(starts.tolist(), lengths.tolist())]
        doc_ids, sections, parents, seqs, ids = [], [], [], [], []
        for r in records:
            doc = make_doc_id(DATASET, r)
            root = make_chunk_id(doc, "s0")
            for k in range(self.per_doc):
                sid = "s0" if k == 0 else f"s0.{k}"
                doc_ids.append(doc)
                sections.append(sid)
                parents.append(None if k == 0 else root)
                seqs.append(k)
                ids.append(root if k == 0 else make_chunk_id(doc, sid))
        hashes = _sha(texts)
        when = dt.datetime.combine(day, dt.time(6), dt.UTC)
        cols = {
            "chunk_id": ids,
            "doc_id": doc_ids,
            "section_id": sections,
            "chunk_text": texts,
            "chunk_type": ["doc_section"] * n,
            "token_count": [len(t) // 4 for t in texts],
            "char_count": [len(t) for t in texts],
            "seq_index": seqs,
            "parent_chunk_id": parents,
            "evidence_anchor": [f'{{"page":null,"char_span":[{k * 2000},{k * 2000 + len(t)}]}}' for k, t in zip(seqs, texts)],
            "embedding_model": [None] * n,
            "embedding_version": [None] * n,
            "chunked_at": [when] * n,
            "chunking_version": ["1.0"] * n,
            "dataset": [DATASET] * n,
            "partition_date": [day] * n,
            "locator": [f"{d}|r=00000000|s={s}|p=000|b={k:03d}" for d, s, k in zip(doc_ids, sections, seqs)],
            "content_hash": hashes,
            "metadata": [None] * n,
        }
        return pa.Table.from_pydict(cols, schema=CHUNK_SCHEMA)

    def embeddings(self, chunks: pa.Table) -> pa.Table:
        n = chunks.num_rows
        vec = self.rng.standard_normal((n, DIMS), dtype=np.float32)
        vec /= np.linalg.norm(vec, axis=1, keepdims=True)
        day = chunks.column("partition_date")[0].as_py()
        return pa.table(
            {
                "chunk_id": chunks.column("chunk_id"),
                "input_hash": chunks.column("content_hash"),
                "embedding_model": pa.array([MODEL] * n),
                "embedding_version": pa.array([VERSION] * n),
                "dimensions": pa.array([DIMS] * n, pa.int32()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel(), pa.float32()), DIMS),
                "embedded_at": pa.array([dt.datetime.combine(day, dt.time(7), dt.UTC)] * n,
                                        pa.timestamp("us", tz="UTC")),
                "partition_date": pa.array([day] * n, pa.date32()),
            }
        )


def synthesize(wh: Warehouse, args: argparse.Namespace) -> dict[str, float]:
    corpus = Corpus(args.seed, args.docs_per_day, args.chunks_per_day // args.docs_per_day, args.relanded, args.deleted)
    update_s: list[float] = []
    for i in range(args.days):
        day = START + dt.timedelta(days=i)
        records, dead = corpus.day(i)
        chunks = corpus.chunks(day, records)
        wh.write(chunks, DATASET, "chunks", day, stamp={"chunking_version": "1.0"})
        wh.write(corpus.embeddings(chunks), DATASET, "embeddings", day)
        docs = [make_doc_id(DATASET, r) for r in records]
        landed = pa.table({"doc_id": docs, "record_id": records, "source_file": records})
        tomb = pa.table({"record_id": pa.array(dead, pa.string()), "source_file": pa.array(["_deleted.txt"] * len(dead))})
        t0 = time.perf_counter()
        update_index(wh, DATASET, day, tombstones=tomb)  # the raw asset's update
        update_index(wh, DATASET, day, landed=landed)  # the chunks asset's update
        update_s.append(time.perf_counter() - t0)
        if (i + 1) % 50 == 0 or i + 1 == args.days:
            print(f"  {i + 1}/{args.days} days synthesized", flush=True)
    ensure_views(wh, [(DATASET, "chunks"), (DATASET, "embeddings"), (DATASET, "redirects")])
    return {"index_update_first_s": update_s[0], "index_update_last_s": statistics.median(update_s[-10:])}


def _time(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> tuple[float, list]:
    t0 = time.perf_counter()
    rows = con.execute(sql, params).fetchall()
    return time.perf_counter() - t0, rows


def measure(wh: Warehouse, name: str, sql_for: Callable[[str], str], params: list, repeat: int) -> dict[str, float]:
    """Cold and warm medians per view kind, the two kinds interleaved round by round."""
    times: dict[str, list[float]] = {f"{k}_{t}": [] for k in ("current", "history") for t in ("cold", "warm")}
    rows: dict[str, int] = {}
    for _ in range(repeat):
        for label, suffix in (("current", ""), ("history", history_suffix(True))):
            sql = sql_for(suffix)
            con = connect_catalog(wh)  # fresh: nothing cached in DuckDB
            try:
                cold, got = _time(con, sql, params)
                warm, _ = _time(con, sql, params)
            finally:
                con.close()
            times[f"{label}_cold"].append(cold)
            times[f"{label}_warm"].append(warm)
            rows[label] = len(got)
    out = {k: statistics.median(v) for k, v in times.items()}
    out["ratio_cold"] = out["current_cold"] / out["history_cold"]
    out["ratio_warm"] = out["current_warm"] / out["history_warm"]
    print(
        f"{name:<16} current cold {out['current_cold'] * 1000:7.0f} ms warm {out['current_warm'] * 1000:7.0f} ms | "
        f"history cold {out['history_cold'] * 1000:7.0f} ms warm {out['history_warm'] * 1000:7.0f} ms | "
        f"ratio cold {out['ratio_cold']:.2f} warm {out['ratio_warm']:.2f} (rows {rows['current']} / {rows['history']})",
        flush=True,
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--chunks-per-day", type=int, default=2000)
    ap.add_argument("--docs-per-day", type=int, default=200)
    ap.add_argument("--relanded", type=float, default=0.25, help="share of each day's documents landed before")
    ap.add_argument("--deleted", type=float, default=0.005, help="documents tombstoned per day, as a share of docs/day")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--data-dir", type=Path, default=None, help="reuse (or keep) the synthesized data here")
    ap.add_argument("--keep", action="store_true", help="keep a temporary data dir")
    args = ap.parse_args()

    root = args.data_dir or Path(tempfile.mkdtemp(prefix="codex-bench-current-"))
    wh = Warehouse(root)
    try:
        if wh.documents_path(DATASET).exists():
            print(f"reusing {root}")
            timings: dict[str, float] = {}
        else:
            print(f"synthesizing {args.days} days x {args.chunks_per_day:,} chunks in {root}", flush=True)
            timings = synthesize(wh, args)
        con = connect_catalog(wh)
        try:
            (hist_rows,) = con.execute(f"SELECT count(*) FROM codex.{DATASET}_chunks_history").fetchall()[0]
            (cur_rows,) = con.execute(f"SELECT count(*) FROM codex.{DATASET}_chunks").fetchall()[0]
            # a child chunk of a document landed more than once, from the middle of the id range (the
            # smallest id would let row-group min/max statistics skip nearly every file)
            (hit,) = con.execute(
                f"SELECT chunk_id FROM codex.{DATASET}_chunks "
                "WHERE parent_chunk_id IS NOT NULL AND doc_id IN (SELECT doc_id FROM codex."
                f"{DATASET}_documents WHERE len(landed_on) > 1 AND deleted_on IS NULL) "
                "AND chunk_id > 'urn:aprs:chunk:8' ORDER BY chunk_id LIMIT 1"
            ).fetchall()[0]
        finally:
            con.close()
        print(f"chunks: {hist_rows:,} in history, {cur_rows:,} current; hit {hit} (document landed more than once)")
        if timings:
            print(f"index update (tombstones + landings) per day: first {timings['index_update_first_s'] * 1000:.0f} ms, "
                  f"at day {args.days} {timings['index_update_last_s'] * 1000:.0f} ms")
        t0 = time.perf_counter()
        unique = check_unique_chunk_ids(wh, DATASET)
        print(f"asset check current_chunk_ids_unique: {time.perf_counter() - t0:.2f} s over {unique.rows:,} current rows "
              f"({'passed' if unique.passed else 'FAILED'})")
        query = np.random.default_rng(1).standard_normal(DIMS).astype(np.float32)
        query = (query / np.linalg.norm(query)).tolist()
        results = {
            "point lookup": measure(
                wh, "point lookup",
                lambda s: f"SELECT * FROM codex.{DATASET}_chunks{s} WHERE chunk_id = ?", [hit], args.repeat),
            "seed parent SQL": measure(
                wh, "seed parent SQL",
                lambda s: EXAMPLE_SQL.format(dataset=DATASET, hit=hit, suffix=s), [], args.repeat),
            "search top-10": measure(
                wh, "search top-10",
                lambda s: SEARCH_SQL.format(dataset=DATASET, suffix=s), [query, MODEL, VERSION, 10], args.repeat),
        }
        worst = max(max(r["ratio_cold"], r["ratio_warm"]) for r in results.values())
        print(f"worst current/history ratio: {worst:.2f} (target <= 1.20)")
    finally:
        if args.data_dir is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif args.data_dir is None:
            print(f"kept {root}")


if __name__ == "__main__":
    main()
