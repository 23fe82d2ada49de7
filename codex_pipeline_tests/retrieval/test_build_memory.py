"""Issue 45, item 1: an index build that cannot fail on size.

The build's DuckDB has a memory limit (the warehouse's ``build_memory_limit``, else an eighth of
the machine). Its sort of the chunk rows spills to disk beyond it; what it could not spill was the
catalog chunks view's join to the embeddings, whose hash table held every chunk's text: at 512 MB
a build failed between 130 and 185 daily partitions of 2,000 chunks. Scaled down here: partitions of
long chunks under a 96 MiB limit, which the old query could not sort past ~8 MB of text per
partition times a few partitions, built at every size.
"""

from __future__ import annotations

import datetime as dt
import hashlib

import numpy as np
import pyarrow as pa
import pytest

from codex_pipeline.core.contract import CHUNK_SCHEMA, RAW_SCHEMA
from codex_pipeline.core.ids import make_chunk_id, make_doc_id
from codex_pipeline.embeddings import embeddings_schema
from codex_pipeline.retrieval import read_manifest, update_dataset_index
from codex_pipeline.retrieval.corpus import index_root, sort_ranges
from codex_pipeline.settings import CodexSettings, SettingsError
from codex_pipeline.warehouse.current import ensure_index
from codex_pipeline.warehouse.step_settings import BUILD_MEMORY_BOUNDS, StepSettings, size_bytes
from codex_pipeline.warehouse.storage import Warehouse

DATASET = "narrative"
START = dt.date(2026, 1, 1)
DIMS = 8
LIMIT = "96MiB"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write_day(wh: Warehouse, i: int, docs: int, chunk_chars: int, rng: np.random.Generator) -> int:
    """One day of ``docs`` documents of four chunks of ``chunk_chars`` random letters; the chunks written."""
    day = START + dt.timedelta(days=i)
    raw, chunks = [], []
    letters = rng.choice(np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789abc ", np.uint8), docs * 4 * chunk_chars).tobytes().decode()
    for d in range(docs):
        record = f"r{i}-{d}"
        doc_id = make_doc_id(DATASET, record)
        parts = [letters[(d * 4 + k) * chunk_chars:(d * 4 + k + 1) * chunk_chars] for k in range(4)]
        text = "\n\n".join(parts)
        raw.append({"doc_id": doc_id, "record_id": record, "dataset": DATASET, "partition_date": day,
                    "source_file": "x.txt", "title": record, "canonical_text": text, "payload": None,
                    "xpaths": None, "blocks": None, "content_hash": _sha(text)})
        at = 0
        for seq, p in enumerate(parts):
            chunks.append({"chunk_id": make_chunk_id(doc_id, f"s{seq}"), "doc_id": doc_id, "section_id": f"s{seq}",
                           "chunk_text": p, "chunk_type": "paragraph", "token_count": len(p) // 4,
                           "char_count": len(p), "seq_index": seq, "parent_chunk_id": None,
                           "evidence_anchor": f'{{"page":null,"char_span":[{at},{at + len(p)}]}}',
                           "embedding_model": None, "embedding_version": None,
                           "chunked_at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC), "chunking_version": "t",
                           "dataset": DATASET, "partition_date": day, "locator": f"{record}|{seq}",
                           "content_hash": _sha(p), "metadata": None})
            at += len(p) + 2
    chunk_table = pa.Table.from_pylist(chunks, schema=CHUNK_SCHEMA)
    n = chunk_table.num_rows
    v = rng.standard_normal((n, DIMS)).astype(np.float32)
    emb = pa.Table.from_arrays(
        [chunk_table.column("chunk_id"), chunk_table.column("content_hash"), pa.array(["m"] * n), pa.array(["1"] * n),
         pa.array([DIMS] * n, pa.int32()), pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIMS),
         pa.array([dt.datetime(2026, 1, 1, tzinfo=dt.UTC)] * n, pa.timestamp("us", tz="UTC"))],
        schema=embeddings_schema(DIMS),
    ).append_column(pa.field("partition_date", pa.date32(), nullable=False), pa.array([day] * n, pa.date32()))
    wh.write(pa.Table.from_pylist(raw, schema=RAW_SCHEMA), DATASET, "raw", day)
    wh.write(chunk_table, DATASET, "chunks", day)
    wh.write(emb, DATASET, "embeddings", day)
    return n


@pytest.mark.parametrize("days", [1, 3, 6])
def test_a_build_under_a_small_memory_limit_indexes_every_chunk(tmp_path, days: int) -> None:
    wh = Warehouse(tmp_path, StepSettings(build_memory_limit=LIMIT))
    rng = np.random.default_rng(days)
    written = sum(write_day(wh, i, docs=500, chunk_chars=4000, rng=rng) for i in range(days))
    ensure_index(wh, DATASET)
    # one sort of six days' rows fails under this limit (OutOfMemoryException): they are sorted in ranges
    assert (sort_ranges(wh, DATASET, LIMIT) > 1) == (days == 6)
    manifest, built = update_dataset_index(wh, DATASET, "m", "1")
    assert built and manifest.chunks == written and manifest.vectors == written
    assert read_manifest(index_root(wh, DATASET)) == manifest


def test_the_default_limit_is_a_share_of_the_machine_within_bounds() -> None:
    low, high = BUILD_MEMORY_BOUNDS
    assert low <= size_bytes(StepSettings().build_memory()) <= high
    assert StepSettings(build_memory_limit=" 2GB ").build_memory() == "2GB"
    assert size_bytes("2GB") == 2 * 10**9 and size_bytes("512MiB") == 512 * 2**20 and size_bytes("1.5 KiB") == 1536


def test_a_limit_that_is_not_a_size_is_refused_naming_the_variable() -> None:
    with pytest.raises(SettingsError, match="CODEX_BUILD_MEMORY_LIMIT='lots' is not a size"):
        CodexSettings.from_env({"CODEX_BUILD_MEMORY_LIMIT": "lots"})
    assert CodexSettings.from_env({"CODEX_BUILD_MEMORY_LIMIT": "1GB"}).steps.build_memory() == "1GB"
    with pytest.raises(ValueError, match="not a size"):
        StepSettings(build_memory_limit="1 gallon")
