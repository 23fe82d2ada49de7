"""Benchmark: search over a year of daily partitions of one dataset.

    python bench/bench_search.py [--partitions 365] [--chunks 2000] [--data-dir DIR] [--keep]

Synthesizes ``--partitions`` daily partitions of ``--chunks`` chunks each (raw,
chunks and embeddings Parquet written through :class:`Warehouse`; documents of five
chunks, a summary parent and four children, cut verbatim from their canonical
text; words drawn from a Zipf distribution over a 30,000-word vocabulary, a permit
number per document; 384-d vectors around 4,000 topic centroids; the evidence units of
chunks with several, as the embeddings step writes them, each unit's vector near its
chunk's), a fraction
``--relanded`` of each day's documents re-landing earlier ones (superseded versions
must not be indexed). The document index is built from those files with
:func:`codex_pipeline.warehouse.current.ensure_index`.

Then, each in its own process so peak RSS is per role:

* **synth**: the partitions above (or those a ``--keep``'d ``--data-dir`` holds); the index is removed;
* **build**: :func:`codex_pipeline.retrieval.update_dataset_index` streams the current
  corpus through the DuckDB current views and writes the index (full build; its peak
  RSS), then one more day lands and the index is updated (the daily cost: graph reused);
* **search**: ``Retriever`` cold start (open + model load + first query), then warm
  p50/p95 over ``--queries`` queries for ``vector``, ``bm25`` and ``hybrid`` (each
  query embedded by the real local MiniLM model: its cost is part of the latency; each
  hit's evidence unit is chosen from the stored unit vectors),
  and point lookups by ``chunk_id``; peak RSS of that process.

Targets (issues 11 and 30): hybrid p50 ≤ 150 ms warm, search process peak RSS ≤ 1.5 GB, cold start ≤ 3 s,
point lookup ≤ 50 ms; build peak RSS ≤ 2 GB at 365 partitions, flat in corpus size.
The last line reads ``search p50 ms (hybrid, N partitions): X``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from codex_pipeline.core.contract import CHUNK_SCHEMA, RAW_SCHEMA
from codex_pipeline.core.ids import make_chunk_id, make_doc_id
from codex_pipeline.embeddings import embeddings_schema
from codex_pipeline.pipeline.embeddings_day import UNITS_TABLE, units_of
from codex_pipeline.warehouse.current import ensure_index, landed_from_raw, update_index
from codex_pipeline.warehouse.step_settings import StepSettings, size_bytes
from codex_pipeline.warehouse.storage import Warehouse

DATASET = "permit_signals"
START = dt.date(2025, 1, 1)
DIMS = 384
VOCAB = 30_000
CHILDREN = 4


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _memory() -> dict[str, float]:
    """This process's RSS now (MB): anonymous, file-backed, and the index files mapped (Linux /proc)."""
    out: dict[str, float] = {}
    try:
        for line in open("/proc/self/status"):
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) / 1024
        mapped = None
        for line in open("/proc/self/smaps"):
            parts = line.split()
            if "-" in parts[0] and len(parts[0]) > 10:
                mapped = parts[5] if len(parts) > 5 and "/search_index/" in parts[5] else None
            elif parts[0] == "Rss:" and mapped:
                name = "index:" + Path(mapped).name
                out[name] = out.get(name, 0.0) + int(parts[1]) / 1024
    except OSError:
        pass
    return out


def _sha(texts: list[str]) -> list[str]:
    return [hashlib.sha256(t.encode()).hexdigest() for t in texts]


class Synth:
    """Deterministic synthetic documents, chunks and vectors."""

    def __init__(self, seed: int, chunks_per_day: int, relanded: float, model: str, version: str) -> None:
        self.rng = np.random.default_rng(seed)
        self.docs_per_day = chunks_per_day // (CHILDREN + 1)
        self.relanded = relanded
        self.model, self.version = model, version
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        self.words = np.array(["".join(letters[self.rng.integers(0, 26, 3 + i % 6)]) for i in range(VOCAB)])
        self.centroids = self.rng.standard_normal((4000, DIMS), dtype=np.float32)
        self.centroids /= np.linalg.norm(self.centroids, axis=1, keepdims=True)
        self.next_record = 0

    def _sentence_block(self, n_words: int) -> str:
        ids = np.minimum(self.rng.zipf(1.2, n_words), VOCAB) - 1
        words = self.words[ids]
        return " ".join(" ".join(words[i:i + 12]) + "." for i in range(0, n_words, 12))

    def day(self, i: int) -> tuple[pa.Table, pa.Table, pa.Table]:
        day = START + dt.timedelta(days=i)
        n_old = int(self.docs_per_day * self.relanded) if self.next_record else 0
        old = self.rng.integers(0, self.next_record, n_old).tolist() if n_old else []
        new = list(range(self.next_record, self.next_record + self.docs_per_day - len(old)))
        self.next_record += len(new)
        raw_rows, chunk_rows = [], []
        now = dt.datetime.now(dt.UTC)
        for rec in sorted(set(old)) + new:
            record_id = f"BP{2020 + rec % 7}-{rec:06d}"
            doc_id = make_doc_id(DATASET, record_id)
            parts = [f"Permit {record_id} issued {day.isoformat()}. " + self._sentence_block(40)]
            parts += [self._sentence_block(int(self.rng.integers(60, 140))) for _ in range(CHILDREN)]
            text, spans, at = "", [], 0
            for p in parts:
                spans.append((at, at + len(p)))
                text += p + "\n\n"
                at = len(text)
            raw_rows.append({
                "doc_id": doc_id, "record_id": record_id, "dataset": DATASET, "partition_date": day,
                "source_file": "permits.jsonl", "title": record_id, "canonical_text": text, "payload": None,
                "xpaths": None, "blocks": None, "content_hash": hashlib.sha256(text.encode()).hexdigest(),
            })
            parent_id = make_chunk_id(doc_id, "summary")
            for seq, (p, (s, e)) in enumerate(zip(parts, spans)):
                section = "summary" if seq == 0 else f"scope.{seq}"
                chunk_rows.append({
                    "chunk_id": make_chunk_id(doc_id, section), "doc_id": doc_id, "section_id": section,
                    "chunk_text": p, "chunk_type": "permit_summary" if seq == 0 else "permit_scope_section",
                    "token_count": len(p) // 4, "char_count": len(p), "seq_index": seq,
                    "parent_chunk_id": None if seq == 0 else parent_id,
                    "evidence_anchor": f'{{"page":null,"char_span":[{s},{e}]}}',
                    "embedding_model": None, "embedding_version": None, "chunked_at": now,
                    "chunking_version": "bench", "dataset": DATASET, "partition_date": day,
                    "locator": f"{record_id}|s={section}", "content_hash": "", "metadata": None,
                })
        chunks = pa.Table.from_pylist(chunk_rows, schema=CHUNK_SCHEMA)
        hashes = _sha(chunks.column("chunk_text").to_pylist())
        chunks = chunks.set_column(chunks.schema.get_field_index("content_hash"), CHUNK_SCHEMA.field("content_hash"),
                                   pa.array(hashes, pa.string()))
        raw = pa.Table.from_pylist(raw_rows, schema=RAW_SCHEMA)
        return raw, chunks, self.embeddings(chunks, hashes, day)

    def embeddings(self, chunks: pa.Table, hashes: list[str], day: dt.date) -> pa.Table:
        n = chunks.num_rows
        v = self.centroids[self.rng.integers(0, len(self.centroids), n)]
        v = v + 0.06 * self.rng.standard_normal((n, DIMS), dtype=np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        schema = embeddings_schema(DIMS)
        table = pa.Table.from_arrays(
            [
                chunks.column("chunk_id"), pa.array(hashes), pa.array([self.model] * n), pa.array([self.version] * n),
                pa.array([DIMS] * n, pa.int32()),
                pa.FixedSizeListArray.from_arrays(pa.array(v.ravel(), pa.float32()), DIMS),
                pa.array([dt.datetime.now(dt.UTC)] * n, pa.timestamp("us", tz="UTC")),
            ],
            schema=schema,
        )
        return table.append_column(pa.field("partition_date", pa.date32(), nullable=False), pa.array([day] * n, pa.date32()))


def write_units(wh: Warehouse, synth: Synth, day: dt.date, chunks: pa.Table, emb: pa.Table) -> int:
    """The day's evidence-unit rows as the embeddings step writes them, each vector near its chunk's."""
    units = units_of(wh, DATASET, day, chunks)
    n = units.num_rows
    owner_row = {cid: i for i, cid in enumerate(emb.column("chunk_id").to_pylist())}
    base = emb.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, DIMS)
    v = base[[owner_row[c] for c in units.column("owner").to_pylist()]]
    v = v + 0.05 * synth.rng.standard_normal((n, DIMS), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    table = pa.table({
        "chunk_id": units.column("owner"), "unit_index": units.column("unit_index"), "pieces": units.column("pieces"),
        "input_hash": pa.array(_sha(units.column("chunk_text").to_pylist())),
        "embedding_model": pa.array([synth.model] * n), "embedding_version": pa.array([synth.version] * n),
        "dimensions": pa.array([DIMS] * n, pa.int32()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel(), pa.float32()), DIMS),
        "embedded_at": pa.array([dt.datetime.now(dt.UTC)] * n, pa.timestamp("us", tz="UTC")),
        "partition_date": pa.array([day] * n, pa.date32()),
    })
    wh.write(table, DATASET, UNITS_TABLE, day)
    return n


def synthesize(wh: Warehouse, args: argparse.Namespace, model: str, version: str) -> Synth:
    synth = Synth(args.seed, args.chunks, args.relanded, model, version)
    for i in range(args.partitions):
        raw, chunks, emb = synth.day(i)
        day = START + dt.timedelta(days=i)
        wh.write(raw, DATASET, "raw", day)
        wh.write(chunks, DATASET, "chunks", day)
        wh.write(emb, DATASET, "embeddings", day)
        write_units(wh, synth, day, chunks, emb)
        if (i + 1) % 50 == 0 or i + 1 == args.partitions:
            print(f"  {i + 1}/{args.partitions} partitions written", flush=True)
    ensure_index(wh, DATASET)
    return synth


MARKER = "bench_search.json"


def phase_synth(args: argparse.Namespace) -> dict[str, float]:
    """The partitions, in a process of their own so the build's peak RSS is the build's."""
    from codex_pipeline.embeddings import make_embedder

    wh = Warehouse(args.data_dir)
    embedder = make_embedder("local")
    t0 = time.perf_counter()
    params = {"partitions": args.partitions, "chunks": args.chunks, "relanded": args.relanded, "seed": args.seed}
    marker = Path(args.data_dir) / MARKER
    if marker.exists() and json.loads(marker.read_text())["params"] == params:  # --keep'd data of the same shape
        print("  reusing the synthesized partitions in the data dir", flush=True)
    else:
        synth = synthesize(wh, args, embedder.model, embedder.version)
        marker.write_text(json.dumps({"params": params, "next_record": synth.next_record}))
    shutil.rmtree(wh.table_dir(DATASET, "search_index"), ignore_errors=True)  # the build below is a full one
    return {"synthesize_s": time.perf_counter() - t0}


def phase_build(args: argparse.Namespace) -> dict[str, float]:
    from codex_pipeline.embeddings import make_embedder
    from codex_pipeline.retrieval import update_dataset_index

    wh = Warehouse(args.data_dir, StepSettings(build_memory_limit=args.build_memory))
    embedder = make_embedder("local")
    out: dict[str, float] = {"build_memory_limit": size_bytes(wh.steps.build_memory()) / 2**20}
    synth = Synth(args.seed + 1, args.chunks, args.relanded, embedder.model, embedder.version)
    synth.next_record = json.loads((Path(args.data_dir) / MARKER).read_text())["next_record"]
    t0 = time.perf_counter()
    manifest, _ = update_dataset_index(wh, DATASET, embedder.model, embedder.version)
    out["build_s"] = time.perf_counter() - t0
    out["indexed_chunks"] = manifest.chunks
    out["indexed_vectors"] = manifest.vectors
    out["indexed_units"] = manifest.units
    out["build_peak_rss_mb"] = _peak_mb()
    out["build_files_mb"] = sum(f.stat().st_size for f in wh.table_dir(DATASET, "search_index").rglob("*")
                                if f.is_file()) / 2**20
    # one more day lands: the daily update (graph reused, BM25 rebuilt)
    raw, chunks, emb = synth.day(args.partitions)
    day = START + dt.timedelta(days=args.partitions)
    wh.write(raw, DATASET, "raw", day)
    wh.write(chunks, DATASET, "chunks", day)
    wh.write(emb, DATASET, "embeddings", day)
    write_units(wh, synth, day, chunks, emb)
    update_index(wh, DATASET, day, landed=landed_from_raw(raw))
    t0 = time.perf_counter()
    manifest, _ = update_dataset_index(wh, DATASET, embedder.model, embedder.version)
    out["update_s"] = time.perf_counter() - t0
    out["update_graph_reused"] = manifest.vectors_reused
    out["update_peak_rss_mb"] = _peak_mb()
    return out


def phase_search(args: argparse.Namespace) -> dict[str, Any]:
    t_start = time.perf_counter()
    from codex_pipeline.retrieval import Retriever

    retriever = Retriever(args.data_dir, [DATASET])
    stages = {"import + open": _memory()}
    retriever.embedder.embed(["permit scope"])
    stages["model loaded"] = _memory()
    retriever.search("permit scope", k=10)
    cold = time.perf_counter() - t_start
    stages["first query"] = _memory()
    index = retriever.index(DATASET)
    rng = np.random.default_rng(7)
    rows = rng.integers(0, len(index), args.queries)
    queries, phrases = [], []
    for i, r in enumerate(rows.tolist()):
        text = index.rows.column("chunk_text")[r].as_py()
        words = text.replace(".", "").split()
        if i % 3 == 0:  # an exact permit number
            queries.append(index.rows.column("locator")[r].as_py().split("|")[0])
        else:  # a few words of a chunk
            start = int(rng.integers(0, max(1, len(words) - 6)))
            queries.append(" ".join(words[start:start + 5]))
            phrases.append((" ".join(words[start:start + 10]), index.rows.column("chunk_id")[r].as_py()))
    out: dict[str, Any] = {"cold_start_s": cold}
    out.update(_correctness(retriever, index, queries, phrases))
    for mode in ("vector", "bm25", "hybrid"):
        times = []
        for q in queries:
            t0 = time.perf_counter()
            retriever.search(q, k=10, mode=mode)
            times.append((time.perf_counter() - t0) * 1000)
        out[f"{mode}_p50_ms"] = statistics.median(times)
        out[f"{mode}_p95_ms"] = float(np.percentile(times, 95))
        stages[f"after {len(queries)} {mode}"] = _memory()
    ids = [index.rows.column("chunk_id")[int(r)].as_py() for r in rng.integers(0, len(index), 200)]
    times = []
    for cid in ids:
        t0 = time.perf_counter()
        hit = retriever.get(cid)
        times.append((time.perf_counter() - t0) * 1000)
        assert hit is not None and hit.chunk_id == cid
    out["lookup_p50_ms"] = statistics.median(times)
    out["lookup_p95_ms"] = float(np.percentile(times, 95))
    stages[f"after {len(ids)} lookups"] = _memory()
    out["search_peak_rss_mb"] = _peak_mb()
    out["stages"] = stages
    return out


def _correctness(retriever: Any, index: Any, queries: list[str], phrases: list[tuple[str, str]]) -> dict[str, float]:
    """Whether search is right, not only fast: the graph's top 10 against an exact scan of every vector
    (usearch's ``exact=True``) for each query's embedding, and how often a ten-word phrase of a chunk finds
    that chunk (or one holding the phrase too) first with the default hybrid search."""
    def recall(vectors: np.ndarray) -> float:
        overlap = []
        for v in vectors:
            got = set(index.graph.search(v, 10).keys.tolist())
            exact = set(index.graph.search(v, 10, exact=True).keys.tolist())
            overlap.append(len(got & exact) / max(1, len(exact)))
        return float(np.mean(overlap))

    rng = np.random.default_rng(3)
    # the synthetic vectors lie around topic centroids the MiniLM queries know nothing of: a query's cosines are
    # all near 0 and its exact top 10 is nearly a tie, so recall is also measured on queries like the data
    stored = np.asarray(index.graph.get(index.keys[rng.integers(0, len(index.keys), len(queries))]), np.float32)
    near = stored + 0.06 * rng.standard_normal(stored.shape).astype(np.float32)
    def words(text: str) -> str:
        return " ".join(text.replace(".", " ").split())

    # right: the phrase's own chunk first, or (a phrase of common words several chunks hold) a chunk holding it
    first = [bool(hits) and (hits[0].chunk_id == cid or words(phrase) in words(hits[0].text))
             for phrase, cid in phrases for hits in [retriever.search(phrase, k=1)]]
    return {"vector_recall_at_10": recall(near / np.linalg.norm(near, axis=1, keepdims=True)),
            "query_vector_recall_at_10": recall(np.asarray(retriever.embedder.embed(queries).vectors, np.float32)),
            "phrase_top1": float(np.mean(first)) if first else 0.0}


def _run(phase: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--phase", phase, "--data-dir", str(args.data_dir),
           "--partitions", str(args.partitions), "--chunks", str(args.chunks), "--queries", str(args.queries),
           "--relanded", str(args.relanded), "--seed", str(args.seed)]
    cmd += ["--build-memory", args.build_memory] if args.build_memory else []
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"bench_search: the {phase} phase failed:\n{proc.stderr[-4000:]}")
    sys.stdout.write("\n".join(line for line in proc.stdout.splitlines() if not line.startswith("{")) + "\n")
    return json.loads(next(line for line in reversed(proc.stdout.splitlines()) if line.startswith("{")))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--partitions", type=int, default=365)
    p.add_argument("--chunks", type=int, default=2000, help="chunks per partition")
    p.add_argument("--relanded", type=float, default=0.0, help="share of each day's documents that re-land earlier ones")
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--keep", action="store_true", help="keep the data directory")
    p.add_argument("--build-memory", default=None,
                   help="the build's DuckDB memory limit (CODEX_BUILD_MEMORY_LIMIT; default: a share of the machine)")
    p.add_argument("--search-only", action="store_true",
                   help="measure the search process only, on the index a --keep'd --data-dir already holds")
    p.add_argument("--phase", choices=["synth", "build", "search"], default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.phase:
        phase = {"synth": phase_synth, "build": phase_build, "search": phase_search}[args.phase]
        print(json.dumps(phase(args)), flush=True)
        return
    own = args.data_dir is None
    args.data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="codex-bench-search-"))
    try:
        print(f"data dir {args.data_dir}: {args.partitions} partitions x {args.chunks} chunks", flush=True)
        synth = None if args.search_only else _run("synth", args)
        build = None if args.search_only else _run("build", args)
        search = _run("search", args)
    finally:
        if own and not args.keep:
            shutil.rmtree(args.data_dir, ignore_errors=True)
    if synth is not None and build is not None:
        print(f"synthesize: {synth['synthesize_s']:.1f} s")
        print(f"build memory limit: {build['build_memory_limit']:.0f} MiB")
        print(f"index build (current corpus {int(build['indexed_chunks'])} chunks, {int(build['indexed_vectors'])} vectors, "
              f"{int(build['indexed_units'])} unit vectors): {build['build_s']:.1f} s, peak RSS {build['build_peak_rss_mb']:.0f} MB, "
              f"index files {build['build_files_mb']:.0f} MB")
        print(f"index update after one more day: {build['update_s']:.1f} s ({int(build['update_graph_reused'])} vectors reused), "
              f"peak RSS {build['update_peak_rss_mb']:.0f} MB")
    print(f"search process cold start (open + model load + first query): {search['cold_start_s']:.2f} s")
    for mode in ("vector", "bm25", "hybrid"):
        print(f"  {mode:<6} p50 {search[f'{mode}_p50_ms']:.1f} ms  p95 {search[f'{mode}_p95_ms']:.1f} ms")
    print(f"vector recall@10 against an exact scan: {search['vector_recall_at_10']:.3f} for vectors like the data, "
          f"{search['query_vector_recall_at_10']:.3f} for the queries' own; "
          f"ten-word phrase finds a chunk holding it first (hybrid): {100 * search['phrase_top1']:.1f}%")
    print(f"  point lookup p50 {search['lookup_p50_ms']:.2f} ms  p95 {search['lookup_p95_ms']:.2f} ms")
    print(f"search process peak RSS: {search['search_peak_rss_mb']:.0f} MB; RSS by stage (MB):")
    for stage, mem in search.get("stages", {}).items():
        files = ", ".join(f"{k[6:]} {v:.0f}" for k, v in sorted(mem.items()) if k.startswith("index:"))
        print(f"  {stage:<22} total {mem.get('VmRSS', 0):.0f}  anon {mem.get('RssAnon', 0):.0f}  "
              f"file {mem.get('RssFile', 0):.0f}" + (f"  (mapped index files: {files})" if files else ""))
    print(f"search p50 ms (hybrid, {args.partitions} partitions): {search['hybrid_p50_ms']:.1f}")


if __name__ == "__main__":
    main()
