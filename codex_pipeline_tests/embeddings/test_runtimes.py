"""Runtime, precision and thread settings of the local model: parsed at the edge, chosen by the hardware."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from codex_pipeline.embeddings.runtimes import (
    LocalModelSettings,
    available_cpus,
    chosen_runtime,
    cpu_bf16_units,
    resolve_precision,
)


def test_defaults_follow_the_machine() -> None:
    options = LocalModelSettings()
    assert (options.runtime, options.precision, options.threads) == ("auto", "auto", None)
    assert options.thread_count == available_cpus() >= 1


def test_queries_run_on_one_thread_unless_told() -> None:
    assert LocalModelSettings().for_queries().threads == 1
    assert LocalModelSettings(threads=2).for_queries().threads == 2


def test_precision_follows_the_hardware_and_a_forced_bf16_needs_it() -> None:
    assert resolve_precision("auto", True, "this CPU") == "bf16"
    assert resolve_precision("auto", False, "this CPU") == "fp32"
    assert resolve_precision("fp32", True, "this CPU") == "fp32"
    with pytest.raises(ValueError, match="no bf16 units .*auto or fp32"):
        resolve_precision("bf16", False, "this CPU")


@pytest.mark.parametrize(("flags", "units"), [
    ("fpu sse2 avx2 avx512f avx512_bf16 amx_bf16 amx_tile", ("amx_bf16", "avx512_bf16")),
    ("fpu sse2 avx2 avx512f avx512_bf16", ("avx512_bf16",)),
    ("fpu sse2 avx2", ()),
])
def test_bf16_units_are_read_from_cpuinfo(tmp_path: Path, flags: str, units: tuple[str, ...]) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: x\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: {flags}\n")
    assert cpu_bf16_units(cpuinfo) == units
    assert cpu_bf16_units(tmp_path / "absent") == ()


def test_a_gpu_is_used_only_with_its_driver_and_torch(tmp_path: Path) -> None:
    from codex_pipeline.embeddings.runtimes import default_device

    assert default_device(tmp_path / "no-driver") == "cpu"
    driver = tmp_path / "version"
    driver.write_text("NVRM version: 550\n")
    has_torch = importlib.util.find_spec("torch") is not None
    assert default_device(driver) == ("cuda" if has_torch else "cpu")
    assert chosen_runtime(LocalModelSettings(), "cuda") == ("torch" if has_torch else "openvino")


def test_auto_runtime_is_openvino_on_a_cpu() -> None:
    assert chosen_runtime(LocalModelSettings(), "cpu") == "openvino"
    assert chosen_runtime(LocalModelSettings(runtime="torch"), "cpu") == "torch"


@pytest.mark.slow
def test_bf16_and_fp32_rank_neighbours_alike() -> None:
    """The reason precision is not part of embedding_version: on texts of several kinds the two
    precisions give nearly the same vectors and the same nearest neighbours."""
    from codex_pipeline.embeddings.local_minilm import LocalMiniLMEmbedder

    if not cpu_bf16_units():
        pytest.skip("this CPU has no bf16 units")
    texts = [f"{topic} item {i}: the council discussed {topic} near {street} and voted {i % 4 + 2} to 1."
             for i, (topic, street) in enumerate((t, s) for t in ("budget", "zoning", "library", "transit", "parks")
                                                 for s in ("Main Street", "Poyntz Avenue", "the river", "Elm Road"))]
    fp32 = LocalMiniLMEmbedder(options=LocalModelSettings(precision="fp32")).embed(texts).vectors
    bf16_embedder = LocalMiniLMEmbedder(options=LocalModelSettings(precision="bf16"))
    bf16 = bf16_embedder.embed(texts).vectors
    assert bf16_embedder.describe()["precision"] == "bf16"
    cosine = (fp32 * bf16).sum(axis=1)
    assert cosine.mean() > 0.9999 and cosine.min() > 0.999
    near32, near16 = (np.argsort(-(v @ v.T), axis=1)[:, 1:4] for v in (fp32, bf16))
    agreement = np.mean([len(set(a) & set(b)) / 3 for a, b in zip(near32, near16)])
    assert agreement >= 0.9


@pytest.mark.slow
def test_threads_and_runtime_are_described() -> None:
    from codex_pipeline.embeddings.local_minilm import LocalMiniLMEmbedder

    e = LocalMiniLMEmbedder(options=LocalModelSettings(threads=1, precision="fp32"))
    e.embed(["one query"])
    how = e.describe()
    assert (how["runtime"], how["threads"], how["precision"]) == ("openvino", 1, "fp32")
    assert len(str(how["onnx_sha256"])) == 64


@pytest.mark.slow
def test_torch_runtime_agrees_with_openvino() -> None:
    pytest.importorskip("torch")
    from codex_pipeline.embeddings.local_minilm import LocalMiniLMEmbedder

    texts = ["The city commission approved the budget.", "Permit 2024-117: new deck and fireplace.", ""]
    ov = LocalMiniLMEmbedder(options=LocalModelSettings("openvino", "fp32")).embed(texts).vectors
    pt_embedder = LocalMiniLMEmbedder(options=LocalModelSettings("torch", "fp32"))
    pt = pt_embedder.embed(texts).vectors
    assert pt_embedder.describe()["runtime"] == "torch"
    np.testing.assert_allclose(ov, pt, atol=2e-6)
