"""The ONNX export of the packaged weights: written once with its provenance, checked on load, repaired when wrong."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from codex_pipeline.embeddings.minilm_export import EXPORT_FILE, PROVENANCE_FILE, export_dir, exported_model
from codex_pipeline.embeddings.minilm_graph import GRAPH_VERSION
from codex_pipeline.embeddings.minilm_weights import OFFICIAL_WEIGHTS_SHA256, WEIGHTS_FILE, file_sha256

pytestmark = pytest.mark.slow  # reads the 88 MB weights and writes a 90 MB export


@pytest.fixture(scope="module")
def weights() -> Path:
    from codex_pipeline.embeddings.minilm_weights import packaged_model_dir

    return packaged_model_dir() / WEIGHTS_FILE


def test_export_records_its_provenance_and_is_reused(tmp_path: Path, weights: Path) -> None:
    first = exported_model(weights, OFFICIAL_WEIGHTS_SHA256, tmp_path)
    assert first.path == export_dir(tmp_path, OFFICIAL_WEIGHTS_SHA256) / EXPORT_FILE
    provenance = json.loads((first.path.parent / PROVENANCE_FILE).read_text())
    assert provenance["source_weights_sha256"] == OFFICIAL_WEIGHTS_SHA256
    assert provenance["graph_version"] == GRAPH_VERSION
    assert provenance["onnx_sha256"] == file_sha256(first.path)
    assert set(provenance["versions"]) == {"onnx", "safetensors", "numpy"}
    stamp = first.path.stat().st_mtime_ns
    again = exported_model(weights, OFFICIAL_WEIGHTS_SHA256, tmp_path)
    assert again.path == first.path and first.path.stat().st_mtime_ns == stamp  # not written twice


def test_a_damaged_export_is_written_again(tmp_path: Path, weights: Path, caplog: pytest.LogCaptureFixture) -> None:
    good = exported_model(weights, OFFICIAL_WEIGHTS_SHA256, tmp_path)
    assert good.path is not None
    digest = file_sha256(good.path)
    with open(good.path, "r+b") as fh:  # one flipped byte in the middle of the weights
        fh.seek(good.path.stat().st_size // 2)
        byte = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with caplog.at_level(logging.WARNING):
        repaired = exported_model(weights, OFFICIAL_WEIGHTS_SHA256, tmp_path)
    assert "does not match its provenance" in caplog.text
    assert repaired.path is not None and file_sha256(repaired.path) == digest


def test_an_export_by_another_writer_version_is_replaced(tmp_path: Path, weights: Path) -> None:
    good = exported_model(weights, OFFICIAL_WEIGHTS_SHA256, tmp_path)
    assert good.path is not None
    prov_path = good.path.parent / PROVENANCE_FILE
    prov = json.loads(prov_path.read_text())
    prov["graph_version"] = "0"
    prov_path.write_text(json.dumps(prov))
    exported_model(weights, OFFICIAL_WEIGHTS_SHA256, tmp_path)
    assert json.loads(prov_path.read_text())["graph_version"] == GRAPH_VERSION


def test_an_unwritable_cache_exports_in_memory(tmp_path: Path, weights: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    exported = exported_model(weights, OFFICIAL_WEIGHTS_SHA256, blocker)
    assert exported.path is None and exported.data is not None
    assert exported.provenance["onnx_sha256"] and len(exported.data) == exported.provenance["onnx_bytes"]
    from codex_pipeline.embeddings.local_minilm import LocalMiniLMEmbedder

    vectors = LocalMiniLMEmbedder(cache_dir=blocker).embed(["a permit for a deck"]).vectors
    assert vectors.shape == (1, 384) and np.isclose(np.linalg.norm(vectors[0]), 1.0, atol=1e-5)
