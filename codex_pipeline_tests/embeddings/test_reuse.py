"""Reuse rules and the embeddings table, with real embedders (loopback OpenAI, local MiniLM)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codex_pipeline.embeddings import (
    EmbeddingCheckpoint,
    EmbeddingFailed,
    InputTooLong,
    VectorLookup,
    embed_partition,
    embeddings_schema,
    input_hash,
    plan_embeddings,
)
from codex_pipeline.transport import RetrySettings
from codex_pipeline_tests.loopback_openai import LoopbackOpenAI, vector_for

T0 = dt.datetime(2026, 11, 24, 6, 0, tzinfo=dt.UTC)
T1 = dt.datetime(2026, 11, 25, 6, 0, tzinfo=dt.UTC)


def chunks_table(texts: list[str], prefix: str = "doc") -> pa.Table:
    """A minimal chunk partition: the two columns embedding needs, plus one it ignores."""
    return pa.table(
        {
            "chunk_id": [f"urn:aprs:chunk:{prefix}{i:012d}" for i in range(len(texts))],
            "chunk_text": pa.array(texts, pa.large_string()),
            "chunking_version": ["1.0"] * len(texts),
        }
    )


def sample_texts(n: int, tag: str = "") -> list[str]:
    return [f"Agenda item {i}{tag}: the commission reviewed permit {1000 + i} and heard public comment." for i in range(n)]


def vectors(table: pa.Table) -> np.ndarray:
    return np.asarray(table.column("vector").to_pylist(), np.float32)


def check_table(table: pa.Table, chunks: pa.Table, d: int) -> None:
    """One row per chunk, in order, each vector the server's vector for that exact text."""
    assert table.schema == embeddings_schema(d)
    assert table.column("chunk_id").to_pylist() == chunks.column("chunk_id").to_pylist()
    texts = chunks.column("chunk_text").to_pylist()
    assert table.column("input_hash").to_pylist() == [input_hash(t) for t in texts]
    np.testing.assert_array_equal(vectors(table), np.stack([vector_for(t, d) for t in texts]))


def test_schema_and_first_run(server: LoopbackOpenAI, make_openai) -> None:
    e = make_openai()
    chunks = chunks_table(sample_texts(20))
    out = embed_partition(chunks, e, now=T0)
    check_table(out.table, chunks, 1536)
    s = out.table.schema
    assert s.field("vector").type == pa.list_(pa.float32(), 1536)
    assert s.field("dimensions").type == pa.int32()
    assert s.field("embedded_at").type == pa.timestamp("us", tz="UTC")
    assert set(out.table.column("embedding_model").to_pylist()) == {"text-embedding-3-large"}
    assert set(out.table.column("embedding_version").to_pylist()) == {e.version}
    assert out.counts.as_dict() | {"tokens": 0} == {
        "inputs": 20, "reused": 0, "embedded": 20, "requests": 1, "sent": 20, "recovered": 0,
        "retries": 0, "tokens": 0, "long_inputs": 0, "windows": 0,
    }


def test_unchanged_rerun_makes_no_request(server: LoopbackOpenAI, make_openai) -> None:
    e = make_openai()
    chunks = chunks_table(sample_texts(30))
    first = embed_partition(chunks, e, now=T0)
    before = server.request_count
    again = embed_partition(chunks, e, previous=first.table, now=T1)
    assert server.request_count == before
    assert again.counts.requests == 0 and again.counts.reused == 30 and again.counts.embedded == 0
    assert again.table.equals(first.table)  # vectors and embedded_at kept
    assert plan_embeddings(chunks, e.model, e.version, previous=again.table).up_to_date


def test_changed_text_of_one_chunk_is_the_only_request(server: LoopbackOpenAI, make_openai) -> None:
    e = make_openai()
    texts = sample_texts(30)
    first = embed_partition(chunks_table(texts), e, now=T0)
    texts[7] = texts[7] + " Amended on second reading."
    chunks = chunks_table(texts)
    server.reset()
    out = embed_partition(chunks, e, previous=first.table, now=T1)
    assert [r.inputs for r in server.requests] == [[texts[7]]]
    assert (out.counts.reused, out.counts.embedded, out.counts.requests) == (29, 1, 1)
    check_table(out.table, chunks, 1536)
    times = out.table.column("embedded_at").to_pylist()
    assert times[7] == T1 and all(t == T0 for i, t in enumerate(times) if i != 7)


def test_removed_chunks_leave_no_orphan_rows(server: LoopbackOpenAI, make_openai) -> None:
    e = make_openai()
    texts = sample_texts(10)
    first = embed_partition(chunks_table(texts), e)
    fewer = chunks_table(texts).slice(0, 6)
    out = embed_partition(fewer, e, previous=first.table)
    assert out.table.num_rows == 6 and out.counts.requests == 0
    check_table(out.table, fewer, 1536)


def test_same_text_elsewhere_costs_nothing(server: LoopbackOpenAI, make_openai, tmp_path: Path) -> None:
    """A chunking_version bump that renames sections but yields identical text, in another
    partition or dataset, is served from the stored files by input hash."""
    e = make_openai()
    texts = sample_texts(25)
    old = embed_partition(chunks_table(texts, prefix="old"), e, now=T0)
    pq.write_table(old.table, tmp_path / "2026-11-24.parquet")
    pq.write_table(old.table.slice(0, 3), tmp_path / "unrelated.parquet")  # duplicates are harmless
    new_chunks = chunks_table(list(reversed(texts)), prefix="new")  # new ids, same texts
    server.reset()
    lookup = VectorLookup.from_files(
        sorted(tmp_path.glob("*.parquet")), model=e.model, version=e.version,
        hashes={input_hash(t) for t in texts},
    )
    out = embed_partition(new_chunks, e, lookup=lookup, now=T1)
    assert server.request_count == 0 and out.counts.reused == 25
    check_table(out.table, new_chunks, 1536)
    assert set(out.table.column("embedded_at").to_pylist()) == {T0}


def test_lookup_ignores_other_models_and_versions(server: LoopbackOpenAI, make_openai, tmp_path: Path) -> None:
    e1536 = make_openai()
    texts = sample_texts(5)
    old = embed_partition(chunks_table(texts), e1536)
    pq.write_table(old.table, tmp_path / "old.parquet")
    e512 = make_openai(dimensions=512)  # another version: every vector must be recomputed
    assert e512.version != e1536.version
    lookup = VectorLookup.from_files([tmp_path / "old.parquet"], model=e512.model, version=e512.version)
    assert len(lookup) == 0
    server.reset()
    out = embed_partition(chunks_table(texts), e512, previous=old.table, lookup=lookup)
    assert out.counts.embedded == 5 and server.input_count == 5
    check_table(out.table, chunks_table(texts), 512)


def test_identical_texts_in_a_partition_are_sent_once(server: LoopbackOpenAI, make_openai) -> None:
    texts = ["Roll call.", "Motion carried.", "Roll call.", "Motion carried.", "Adjourned."]
    chunks = chunks_table(texts)
    out = embed_partition(chunks, make_openai())
    assert server.input_count == 3 and out.counts.sent == 3 and out.counts.embedded == 5
    check_table(out.table, chunks, 1536)


def test_failure_midway_keeps_finished_batches(server: LoopbackOpenAI, make_openai, tmp_path: Path) -> None:
    texts = sample_texts(95)
    chunks = chunks_table(texts)
    ckpt = EmbeddingCheckpoint(tmp_path / "checkpoints" / "narrative" / "embeddings" / "2026-11-24")
    flaky = make_openai(max_batch_inputs=10, max_concurrency=1, retry=RetrySettings(max_retries=2, backoff_base=0.01))
    server.push(None, times=4)  # batches 1-4 succeed, then the server breaks for good
    server.fail_always("server_error")
    with pytest.raises(EmbeddingFailed) as info:
        embed_partition(chunks, flaky, checkpoint=ckpt)
    assert "HTTP 500" in str(info.value)
    assert any("40 vectors embedded before the failure are saved" in n and "only the 55 inputs" in n
               for n in info.value.__notes__)
    assert ckpt.rows() == 40
    first_run_inputs = [t for r in server.served for t in r.inputs]
    assert first_run_inputs == texts[:40]

    server.reset()  # healed
    out = embed_partition(chunks, make_openai(max_batch_inputs=10), checkpoint=ckpt)
    second_run_inputs = sorted(t for r in server.requests for t in r.inputs)
    assert second_run_inputs == sorted(texts[40:])  # only what was missing
    assert server.request_count == 6
    assert (out.counts.recovered, out.counts.embedded, out.counts.reused) == (40, 55, 40)
    check_table(out.table, chunks, 1536)  # nothing lost, nothing duplicated
    ckpt.clear()
    assert ckpt.rows() == 0 and not ckpt.directory.exists()


def test_failure_with_parallel_batches_loses_nothing(server: LoopbackOpenAI, make_openai, tmp_path: Path) -> None:
    texts = sample_texts(200)
    chunks = chunks_table(texts)
    ckpt = EmbeddingCheckpoint(tmp_path / "ckpt")
    flaky = make_openai(max_batch_inputs=8, max_concurrency=4, retry=RetrySettings(max_retries=1, backoff_base=0.01))
    server.push(None, times=9)
    server.fail_always("rate_limit")
    with pytest.raises(EmbeddingFailed, match="HTTP 429"):
        embed_partition(chunks, flaky, checkpoint=ckpt)
    saved = ckpt.rows()
    served_first = {t for r in server.served for t in r.inputs}
    assert saved == len(served_first) == 72  # every answered batch was kept, once

    server.reset()
    out = embed_partition(chunks, make_openai(max_batch_inputs=8, max_concurrency=4), checkpoint=ckpt)
    sent_second = [t for r in server.requests for t in r.inputs]
    assert len(sent_second) == len(set(sent_second)) == 200 - saved
    assert not set(sent_second) & served_first
    assert out.counts.recovered == saved
    check_table(out.table, chunks, 1536)


def test_too_long_input_names_the_chunk(server: LoopbackOpenAI, make_openai) -> None:
    chunks = chunks_table(["fine", " word" * 9000])
    with pytest.raises(InputTooLong) as info:
        embed_partition(chunks, make_openai())
    assert any("urn:aprs:chunk:doc000000000001" in n for n in info.value.__notes__)
    assert server.request_count == 0


def test_duplicate_chunk_ids_are_refused(make_openai) -> None:
    chunks = pa.table({"chunk_id": ["a", "a"], "chunk_text": ["x", "y"]})
    with pytest.raises(ValueError, match="duplicate chunk_id"):
        embed_partition(chunks, make_openai())


def test_local_model_reuse(local_embedder, tmp_path: Path) -> None:
    texts = sample_texts(12)
    chunks = chunks_table(texts)
    first = embed_partition(chunks, local_embedder, now=T0)
    assert first.counts.embedded == 12 and first.counts.requests >= 1
    assert first.table.schema == embeddings_schema(384)
    again = embed_partition(chunks, local_embedder, previous=first.table, now=T1)
    assert again.counts.requests == 0 and again.table.equals(first.table)
    texts[3] = "A different text entirely."
    out = embed_partition(chunks_table(texts), local_embedder, previous=first.table, now=T1)
    assert (out.counts.embedded, out.counts.reused, out.counts.sent) == (1, 11, 1)
    expected = local_embedder.embed([texts[3]]).vectors[0]
    np.testing.assert_allclose(vectors(out.table)[3], expected, atol=1e-6)
