"""The ONNX export of the packaged weights, written once per machine and checked on every load.

The export is a cache: it is derived from the SHA-checked ``model.safetensors`` by
:func:`~codex_pipeline.embeddings.minilm_graph.build_minilm_graph`, so anything wrong
with it (a missing or damaged file, another writer version, other source weights) is
repaired by writing it again, never an error. Beside it, ``provenance.json`` records what
made it: the writer and its graph version, the source weights' SHA-256, the versions of
onnx, safetensors and numpy, and the export's own SHA-256, which is checked on load.

A cache folder that cannot be written (a read-only home) costs an export in memory per
process (about half a second), with a warning.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codex_pipeline.embeddings.minilm_graph import GRAPH_VERSION, OPSET, build_minilm_graph
from codex_pipeline.embeddings.minilm_weights import file_sha256

log = logging.getLogger(__name__)

EXPORT_FILE = "model.onnx"
PROVENANCE_FILE = "provenance.json"
WRITER = "codex_pipeline.embeddings.minilm_graph.build_minilm_graph"


def default_cache_dir() -> Path:
    """``~/.cache/codex-pipeline/models``: per user, shared by every data dir and worker."""
    return Path.home() / ".cache" / "codex-pipeline" / "models"


@dataclass(frozen=True)
class ExportedModel:
    """The ONNX model to load: a checked file, or bytes when no cache folder could be written."""

    path: Path | None
    data: bytes | None
    provenance: dict[str, Any]


def export_dir(cache_dir: Path, weights_sha256: str) -> Path:
    """The cache folder of one export, named by the weights' SHA-256 (16 hex) and ``GRAPH_VERSION``."""
    return cache_dir / f"all-MiniLM-L6-v2-{weights_sha256[:16]}-graph{GRAPH_VERSION}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _checked(folder: Path, weights_sha256: str) -> ExportedModel | None:
    """The cached export if its provenance matches the weights and the writer, and the file its SHA-256."""
    try:
        provenance = json.loads((folder / PROVENANCE_FILE).read_text(encoding="utf-8"))
        if provenance.get("source_weights_sha256") != weights_sha256 or provenance.get("graph_version") != GRAPH_VERSION:
            return None
        if file_sha256(folder / EXPORT_FILE) != provenance.get("onnx_sha256"):
            log.warning("%s does not match its provenance (damaged or replaced); exporting it again", folder / EXPORT_FILE)
            return None
    except (OSError, ValueError, AttributeError):
        return None
    return ExportedModel(folder / EXPORT_FILE, None, provenance)


def _provenance(weights_path: Path, weights_sha256: str, data: bytes) -> dict[str, Any]:
    import numpy
    import onnx
    import safetensors

    return {
        "model": "all-MiniLM-L6-v2",
        "writer": WRITER,
        "graph_version": GRAPH_VERSION,
        "opset": OPSET,
        "source_weights": str(weights_path),
        "source_weights_sha256": weights_sha256,
        "onnx_sha256": _sha256(data),
        "onnx_bytes": len(data),
        "versions": {"onnx": onnx.__version__, "safetensors": safetensors.__version__, "numpy": numpy.__version__},
        "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # a cache other users' workers may read (mkstemp makes it 0600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def exported_model(weights_path: Path, weights_sha256: str, cache_dir: Path | None = None) -> ExportedModel:
    """The ONNX export of ``weights_path`` (whose SHA-256 the caller verified): cached, else written now.

    Two processes exporting at once write identical bytes and each replaces the file
    atomically, so neither sees a partial export.
    """
    folder = export_dir(cache_dir or default_cache_dir(), weights_sha256)
    cached = _checked(folder, weights_sha256)
    if cached is not None:
        return cached
    data = build_minilm_graph(weights_path).SerializeToString()
    provenance = _provenance(weights_path, weights_sha256, data)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(folder / EXPORT_FILE, data)
        _write_atomic(folder / PROVENANCE_FILE, json.dumps(provenance, indent=2).encode())
    except OSError as exc:
        log.warning("cannot cache the ONNX export in %s (%s): exporting in memory for this process", folder,
                    exc.strerror or exc)
        return ExportedModel(None, data, provenance)
    log.info("exported all-MiniLM-L6-v2 to %s", folder / EXPORT_FILE)
    return ExportedModel(folder / EXPORT_FILE, None, provenance)
