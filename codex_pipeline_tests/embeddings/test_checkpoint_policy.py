"""Checkpoints by count or time: a run killed outright keeps what was written, and resumes from it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from codex_pipeline.embeddings.local_minilm import LocalMiniLMEmbedder
from codex_pipeline.embeddings.reuse import (
    CheckpointSettings,
    EmbeddingCheckpoint,
    VectorLookup,
    embed_partition,
)
from codex_pipeline.settings import EnvName
from codex_pipeline_tests.embeddings.embed_child import chunks_table
from codex_pipeline_tests.embeddings.pausing import RecordingEmbedder, sample_texts
from codex_pipeline_tests.fakes import FakeEmbedder

MODEL, VERSION = "m", "v1"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_writes_after_n_inputs_or_t_seconds_whichever_first(tmp_path: Path) -> None:
    clock = Clock()
    ckpt = EmbeddingCheckpoint(tmp_path / "ck", CheckpointSettings(every_inputs=10, every_seconds=30), clock=clock)
    rng = np.random.default_rng(0)
    written: list[int] = []
    k = 0

    def add(rows: int, seconds: float) -> None:
        nonlocal k
        clock.now += seconds
        hashes = [f"h{k + i}" for i in range(rows)]
        k += rows
        if ckpt.add(hashes, rng.random((rows, 4), np.float32), MODEL, VERSION, 0) is not None:
            written.append(ckpt.rows())

    add(3, 12)  # t=12: 3 buffered
    add(3, 12)  # t=24: 6 buffered
    assert ckpt.files() == [] and ckpt.pending == 6
    add(3, 12)  # t=36: 30 s since the start -> written, by time
    assert written == [9] and ckpt.pending == 0
    add(4, 1)
    add(6, 1)  # 10 inputs within 2 s -> written, by count
    assert written == [9, 19]
    add(2, 1)
    assert ckpt.pending == 2 and ckpt.flush() is not None and ckpt.rows() == 21 and ckpt.pending == 0
    assert ckpt.flush() is None  # nothing buffered: no empty file
    lookup = VectorLookup()
    assert ckpt.load_into(lookup, model=MODEL, version=VERSION) == 21 == len(lookup)


def test_local_model_hands_over_every_forward_pass(local_embedder: LocalMiniLMEmbedder) -> None:
    long_text = " ".join(sample_texts(12, words=30, seed=3))  # over 254 wordpieces: several windows
    texts = [*sample_texts(7), long_text]
    e = LocalMiniLMEmbedder(batch_size=2)
    calls: list[np.ndarray] = []
    got = np.full((len(texts), e.dimensions), np.nan, np.float32)

    def on_batch(idx: np.ndarray, vecs: np.ndarray) -> None:
        calls.append(idx.copy())
        got[idx] = vecs

    res = e.embed(texts, on_batch=on_batch)
    seen = np.concatenate(calls)
    assert sorted(seen.tolist()) == list(range(len(texts)))  # each text once, long one when complete
    assert res.long_inputs == 1 and 4 <= len(calls) <= res.requests  # a call per forward pass, not per block
    np.testing.assert_array_equal(got, res.vectors)
    # batch_size 2 vs 32: in bf16 the batches' padded widths move rounding (< 5e-4; 1e-7 in fp32)
    np.testing.assert_allclose(res.vectors, local_embedder.embed(texts).vectors, atol=1e-3)


def _kill_midway(tmp_path: Path, n: int, pause_after: int, seconds: str) -> EmbeddingCheckpoint:
    """Run the embedding in a child, SIGKILL it after ``pause_after`` batches of 2."""
    ckpt_dir, marker = tmp_path / "ckpt", tmp_path / "paused"
    env = {**os.environ, EnvName.CHECKPOINT_SECONDS: seconds, EnvName.CHECKPOINT_INPUTS: "4096", "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, "-m", "codex_pipeline_tests.embeddings.embed_child", str(ckpt_dir), str(n),
         str(pause_after), str(marker)],
        env=env,
    )
    try:
        deadline = time.monotonic() + 600
        while not marker.exists():
            assert child.poll() is None, f"the embedding child exited early ({child.returncode})"
            assert time.monotonic() < deadline, "the embedding child never reached its pause"
            time.sleep(0.1)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    return EmbeddingCheckpoint(ckpt_dir, CheckpointSettings())


@pytest.mark.parametrize(("seconds", "saved"), [("0", 6), ("3600", 0)], ids=["by-time", "count-only"])
def test_killed_run_resumes_from_what_it_wrote(
    tmp_path: Path, fake_embedder: FakeEmbedder, seconds: str, saved: int
) -> None:
    texts = sample_texts(16)
    ckpt = _kill_midway(tmp_path, n=len(texts), pause_after=3, seconds=seconds)
    # every finished batch was written at once by time; counting to 4,096 alone would have saved nothing
    assert ckpt.rows() == saved
    rec = RecordingEmbedder(fake_embedder)
    out = embed_partition(chunks_table(texts), rec, checkpoint=ckpt)
    assert len(rec.sent) == len(texts) - saved and len(set(rec.sent)) == len(rec.sent)
    assert (out.counts.recovered, out.counts.embedded) == (saved, len(texts) - saved)
    np.testing.assert_allclose(
        np.stack(out.table.column("vector").to_numpy(zero_copy_only=False)),
        fake_embedder.embed(texts).vectors,
        atol=2e-6,
    )
