"""What runs the local model: OpenVINO on the ONNX export (the default), or torch (an extra).

Both take ``[CLS] … [SEP]`` id batches with their attention mask and return unit-length
sentence vectors, so the embedder around them (tokenizing, long-input windows,
checkpoints) is one piece of code.

Precision is chosen by the hardware: ``auto`` is bf16 where the CPU has bf16 units
(AMX-BF16 or AVX512-BF16; 2.6-4x less CPU per word piece) and fp32 elsewhere. On
all-MiniLM-L6-v2 the bf16 vectors keep a cosine of 0.99998 to fp32 and 99.7% of every
text's ten nearest neighbours (``bench/bench_embed_runtimes.py``), so the precision is
recorded in the embeddings' metadata but is not part of ``embedding_version``: a site
that moves workers between CPU kinds neither re-embeds nor mixes vectors that rank
differently. ``docs/embeddings.md`` has the figures.
"""

from __future__ import annotations

import io
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from codex_pipeline.embeddings.base import LocalEmbedderMissing
from codex_pipeline.embeddings.minilm_export import ExportedModel

RUNTIMES = ("auto", "openvino", "torch")
PRECISIONS = ("auto", "fp32", "bf16")
_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


def available_cpus() -> int:
    """The cores this process may run on (its affinity mask, which containers and ``taskset`` narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def cpu_bf16_units(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, ...]:
    """The bf16 units this CPU reports (``amx_bf16``, ``avx512_bf16``); empty where none or unknown."""
    try:
        with cpuinfo.open(encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return tuple(f for f in _BF16_FLAGS if f in flags)
    except OSError:
        pass
    return ()


@dataclass(frozen=True)
class LocalModelSettings:
    """How the local model runs: which runtime, which precision, how many threads.

    ``threads=None`` uses every core the process may run on; a site that runs one worker
    per core sets 1 so workers do not oversubscribe.
    """

    runtime: str = "auto"
    precision: str = "auto"
    threads: int | None = None

    def __post_init__(self) -> None:
        if self.runtime not in RUNTIMES:
            raise ValueError(f"local runtime {self.runtime!r} is not one of {', '.join(RUNTIMES)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"local precision {self.precision!r} is not one of {', '.join(PRECISIONS)}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"local threads {self.threads} is not a thread count: use 1 or more "
                             "(or none for every core)")

    @property
    def thread_count(self) -> int:
        """``threads``, or every core the process may run on when it is None."""
        return self.threads or available_cpus()

    def for_queries(self) -> LocalModelSettings:
        """These options for a process that embeds queries: one thread unless ``threads`` says otherwise.

        A query is one short text; more threads only add synchronization, which on a loaded
        machine costs more than the query itself."""
        return self if self.threads else LocalModelSettings(self.runtime, self.precision, 1)


def resolve_precision(asked: str, has_bf16: bool, where: str) -> str:
    """``fp32`` or ``bf16``: ``auto`` follows the hardware; a forced bf16 needs bf16 units."""
    if asked == "auto":
        return "bf16" if has_bf16 else "fp32"
    if asked == "bf16" and not has_bf16:
        raise ValueError(f"precision bf16 was asked for but {where} has no bf16 units (AMX-BF16 or AVX512-BF16): "
                         "ask for auto or fp32")
    return asked


class Runtime(Protocol):
    """What runs the local MiniLM: a padded batch of token ids in, unit vectors out."""

    name: str
    precision: str
    threads: int

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """``[batch, 384]`` float32 unit vectors for a padded batch."""
        ...

    def describe(self) -> dict[str, object]:
        """What runs the model (runtime, version, precision, threads, …), for run metadata."""


class OpenVinoRuntime:
    """The ONNX export compiled by OpenVINO's CPU plugin (oneDNN; bf16 on AMX / AVX512-BF16)."""

    name = "openvino"

    def __init__(self, exported: ExportedModel, precision: str, threads: int) -> None:
        try:
            import openvino as ov
        except ImportError as exc:
            raise LocalEmbedderMissing("openvino") from exc
        core = ov.Core()
        capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
        self.precision = resolve_precision(precision, "BF16" in capabilities, "this CPU")
        self.threads = threads
        self.provenance = exported.provenance
        model = core.read_model(str(exported.path) if exported.path else io.BytesIO(exported.data or b""))
        compiled = core.compile_model(model, "CPU", {
            "INFERENCE_PRECISION_HINT": "bf16" if self.precision == "bf16" else "f32",
            "INFERENCE_NUM_THREADS": threads,
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
        })
        self._request = compiled.create_infer_request()
        self._lock = threading.Lock()  # one infer request: callers take turns
        self.version = ov.get_version()

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """One caller at a time: the compiled model has a single infer request."""
        with self._lock:
            out = self._request.infer({"input_ids": input_ids, "attention_mask": attention_mask})
            return np.array(out[0], np.float32)  # a copy: the request reuses its output buffer

    def describe(self) -> dict[str, object]:
        """Runtime, version, precision, threads and the export's ``onnx_sha256``, for run metadata."""
        return {"runtime": self.name, "runtime_version": self.version, "precision": self.precision,
                "threads": self.threads, "onnx_sha256": self.provenance.get("onnx_sha256")}


class TorchRuntime:
    """sentence-transformers on torch (the ``[torch]`` extra): for a CUDA GPU, or a site that has torch anyway."""

    name = "torch"

    def __init__(self, model_dir: Path, precision: str, threads: int, device: str) -> None:
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise LocalEmbedderMissing(exc.name or "torch", extra="torch") from exc
        self._torch = torch
        self.device = device
        if device.startswith("cuda"):
            has_bf16, where = torch.cuda.is_available() and torch.cuda.is_bf16_supported(), f"GPU {device}"
        else:
            has_bf16, where = bool(cpu_bf16_units()), "this CPU"
            torch.set_num_threads(threads)
        self.precision = resolve_precision(precision, has_bf16, where)
        self.threads = threads
        self._model: Any = SentenceTransformer(str(model_dir), device=device, local_files_only=True)
        self._model.eval()
        self.version = torch.__version__

    def run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """On ``device``, under bf16 autocast when ``precision`` is bf16; normalized here."""
        torch = self._torch
        ids = torch.from_numpy(input_ids).to(self.device)
        features = {"input_ids": ids, "attention_mask": torch.from_numpy(attention_mask).to(self.device),
                    "token_type_ids": torch.zeros_like(ids), "modality": "text"}
        device_type = "cuda" if self.device.startswith("cuda") else "cpu"
        with torch.inference_mode(), torch.autocast(device_type, torch.bfloat16, enabled=self.precision == "bf16"):
            emb = self._model(features)["sentence_embedding"].float()
        return torch.nn.functional.normalize(emb, p=2, dim=1).cpu().numpy()

    def describe(self) -> dict[str, object]:
        """Runtime, version, precision, threads and ``device``, for run metadata."""
        return {"runtime": self.name, "runtime_version": self.version, "precision": self.precision,
                "threads": self.threads, "device": self.device}


def default_device(nvidia_driver: Path = Path("/proc/driver/nvidia/version")) -> str:
    """``cuda`` where an NVIDIA driver is loaded and torch is installed (the ``[torch]`` extra), else ``cpu``.

    Decided without importing torch (seconds), so a CPU-only search process starts fast."""
    return "cuda" if nvidia_driver.exists() and _has("torch") else "cpu"


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def chosen_runtime(options: LocalModelSettings, device: str) -> str:
    """``openvino`` or ``torch``: ``auto`` is torch only for a CUDA device, else OpenVINO when installed."""
    if options.runtime != "auto":
        return options.runtime
    if device.startswith("cuda") or not _has("openvino"):
        return "torch" if _has("torch") else "openvino"  # (the missing one's error names what to install)
    return "openvino"
