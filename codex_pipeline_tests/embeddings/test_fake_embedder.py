"""The tests' fake embedder keeps the embedder protocol and gives the same vectors in every process."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa

from codex_pipeline.embeddings import Embedder, embed_partition
from codex_pipeline_tests.fakes import FAKE_DIMENSIONS, FAKE_MODEL, FakeEmbedder, FakeEmbedding, fake_vector

TEXTS = ["The storm drain on Elm Street is cleared.", "Storm drain work on Elm Street", "", "Budget hearing, 7 pm.", "é ✓ 𝔘"]


def test_protocol_dimensions_and_unit_norm() -> None:
    e = FakeEmbedder()
    assert isinstance(e, Embedder)
    assert (e.dimensions, e.model) == (FAKE_DIMENSIONS, FAKE_MODEL) and "all-MiniLM" not in e.version
    vectors = e.embed(TEXTS).vectors
    assert vectors.shape == (len(TEXTS), FAKE_DIMENSIONS) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert len({v.tobytes() for v in vectors}) == len(TEXTS)  # distinct texts, distinct vectors


def test_shared_words_are_near_and_other_texts_far() -> None:
    a, b, c = (fake_vector(t) for t in TEXTS[:2] + TEXTS[3:4])
    assert float(a @ b) > 0.4 > float(abs(a @ c))


def test_batches_are_handed_over_in_order_and_do_not_change_vectors() -> None:
    seen: list[np.ndarray] = []
    result = FakeEmbedder(batch_size=2).embed(TEXTS, on_batch=lambda idx, vecs: seen.append(idx.copy()))
    assert [s.tolist() for s in seen] == [[0, 1], [2, 3], [4]] and result.requests == 3
    np.testing.assert_array_equal(result.vectors, FakeEmbedder(batch_size=32).embed(TEXTS).vectors)


def test_same_bytes_in_another_process() -> None:
    script = ("import sys; from codex_pipeline_tests.fakes import fake_vector; "
              "sys.stdout.write(fake_vector(sys.argv[1]).tobytes().hex())")
    out = subprocess.run([sys.executable, "-c", script, TEXTS[0]], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout
    assert out == fake_vector(TEXTS[0]).tobytes().hex()


def test_the_resource_builds_the_fake_and_the_reuse_rules_accept_it() -> None:
    embedder = FakeEmbedding(local_batch_size=3).build()
    assert isinstance(embedder, FakeEmbedder) and embedder.batch_size == 3
    chunks = pa.table({"chunk_id": [f"c{i}" for i in range(4)], "chunk_text": TEXTS[:4]})
    first = embed_partition(chunks, embedder)
    again = embed_partition(chunks, embedder, previous=first.table)
    assert (again.counts.embedded, again.counts.reused) == (0, 4)
