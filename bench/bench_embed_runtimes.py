"""The local model's runtimes and precisions side by side, in one process, on the same texts.

    python bench/bench_embed_runtimes.py [--short 300] [--long 300] [--repeat 2] [--threads 1] [--json]

Paths, each fed the very same padded batches (Codex's length-sorted batches of 32, long
texts already cut into its windows), interleaved so each sees the same machine state:

- ``torch fp32``: the path before this change (sentence-transformers' model on torch; the
  reference every other path is compared with). Needs the ``[torch]`` extra.
- ``torch bf16``: the same under ``torch.autocast`` (where the CPU has bf16 units).
- ``openvino fp32``: the ONNX export on OpenVINO, forced to fp32.
- ``openvino auto``: the default install's embedder (bf16 where the CPU has it, else fp32).

Reported per path: CPU seconds (``time.process_time``, best of ``--repeat``) per 1,000 word
pieces and its ratio to ``torch fp32``; cosine to ``torch fp32`` (mean / min); the share of
each fed sequence's ten nearest neighbours (among all sequences, by cosine) that ``torch
fp32`` also has (windows of long texts are compared before pooling: stricter than per
text); the load average. Targets (issue 31): the default at <= 0.4x today's CPU per word piece
with cosine >= 0.999 and top-10 >= 0.99; on a CPU without bf16, no slower than today.
No quantized option is offered, so none is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_embeddings import DEFAULT_CORPUS, corpus_texts  # noqa: E402

from codex_pipeline.embeddings.local_minilm import MAX_CONTENT_WORDPIECES, LocalMiniLMEmbedder, _windows  # noqa: E402
from codex_pipeline.embeddings.minilm_export import exported_model  # noqa: E402
from codex_pipeline.embeddings.minilm_weights import WEIGHTS_FILE  # noqa: E402
from codex_pipeline.embeddings.runtimes import OpenVinoRuntime, TorchRuntime, cpu_bf16_units  # noqa: E402


def batches(embedder: LocalMiniLMEmbedder, texts: list[str], size: int = 32) -> tuple[list, int, list[int]]:
    """Codex's batches for ``texts``: ``(rows, ids, mask)`` each, the word pieces fed, and each row's text."""
    tok = embedder.load()
    seqs: list[list[int]] = []
    owner: list[int] = []
    for i, enc in enumerate(tok.tokenizer.encode_batch(texts, add_special_tokens=False)):
        spans = [(0, len(enc.ids))] if len(enc.ids) <= MAX_CONTENT_WORDPIECES else \
            _windows(enc.word_ids, MAX_CONTENT_WORDPIECES, embedder.window_overlap)
        for s, e in spans:
            seqs.append(enc.ids[s:e])
            owner.append(i)
    order = sorted(range(len(seqs)), key=lambda k: -len(seqs[k]))
    out = []
    for b in range(0, len(order), size):
        rows = order[b : b + size]
        width = len(seqs[rows[0]]) + 2
        ids = np.full((len(rows), width), tok.pad_id, np.int64)
        mask = np.zeros((len(rows), width), np.int64)
        for r, k in enumerate(rows):
            n = len(seqs[k])
            ids[r, 0], ids[r, 1 : n + 1], ids[r, n + 1] = tok.cls_id, seqs[k], tok.sep_id
            mask[r, : n + 2] = 1
        out.append((rows, ids, mask))
    return out, sum(len(s) + 2 for s in seqs), owner


def run(runtime, work: list, n: int) -> np.ndarray:
    vecs = np.empty((n, 384), np.float32)
    for rows, ids, mask in work:
        vecs[rows] = runtime.run(ids, mask)
    return vecs


def top10_agreement(ref: np.ndarray, other: np.ndarray) -> float:
    def top(v: np.ndarray) -> np.ndarray:
        sims = v @ v.T
        np.fill_diagonal(sims, -np.inf)
        return np.argsort(-sims, axis=1)[:, :10]

    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top(ref), top(other))]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--short", type=int, default=300, help="short texts (speaker turns, permit records)")
    ap.add_argument("--long", type=int, default=300, help="long texts (600-token narrative windows)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="threads per runtime (1: CPU seconds compare cleanly)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    texts, source = corpus_texts(args.corpus, args.short, args.long)
    embedder = LocalMiniLMEmbedder()
    work, wordpieces, _ = batches(embedder, texts)
    sequences = sum(len(rows) for rows, _, _ in work)
    export = exported_model(embedder.model_dir / WEIGHTS_FILE, embedder.weights_sha256)
    units = cpu_bf16_units()
    paths: dict[str, object] = {}
    try:
        paths["torch fp32"] = TorchRuntime(embedder.model_dir, "fp32", args.threads, "cpu")
        if units:
            paths["torch bf16"] = TorchRuntime(embedder.model_dir, "bf16", args.threads, "cpu")
    except Exception as exc:  # noqa: BLE001 - no [torch] extra: the other paths still run
        print(f"(torch paths skipped: {exc})")
    paths["openvino fp32"] = OpenVinoRuntime(export, "fp32", args.threads)
    paths["openvino auto"] = OpenVinoRuntime(export, "auto", args.threads)
    print(f"{len(texts)} texts from {source}: {sequences} sequences fed (long texts as windows), {wordpieces} word "
          f"pieces; CPU bf16 units: {', '.join(units) or 'none'}; {args.threads} thread(s) per path; "
          f"best of {args.repeat}, interleaved; openvino auto runs in {paths['openvino auto'].precision}")  # type: ignore[attr-defined]

    for runtime in paths.values():  # warm-up: first-call allocations out of the figures
        run(runtime, work[-2:], len(texts) * 4)
    cpu: dict[str, list[float]] = {k: [] for k in paths}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.repeat):
        for name, runtime in paths.items():
            t0 = time.process_time()
            vectors[name] = run(runtime, work, sequences)
            cpu[name].append(time.process_time() - t0)
    ref_name = "torch fp32" if "torch fp32" in paths else "openvino fp32"
    ref = vectors[ref_name]
    results = {}
    for name in paths:
        best = min(cpu[name])
        cos = (vectors[name] * ref).sum(axis=1)
        results[name] = {
            "cpu_s": round(best, 2),
            "cpu_ms_per_1000_wordpieces": round(1000 * 1000 * best / wordpieces, 1),
            "ratio": round(best / min(cpu[ref_name]), 3),
            "cosine_mean": float(cos.mean()),
            "cosine_min": float(cos.min()),
            "top10_agreement": round(top10_agreement(ref, vectors[name]), 4),
        }
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"texts": len(texts), "wordpieces": wordpieces, "threads": args.threads, "reference": ref_name,
                          "cpu_bf16_units": list(units), "load_average": load, "paths": results}, indent=2))
        return
    print(f"{'path':<15} {'CPU s':>7} {'ms/1k wp':>9} {'ratio':>6} {'cos mean':>9} {'cos min':>9} {'top-10':>7}")
    for name, r in results.items():
        print(f"{name:<15} {r['cpu_s']:>7.2f} {r['cpu_ms_per_1000_wordpieces']:>9.1f} {r['ratio']:>6.3f} "
              f"{r['cosine_mean']:>9.6f} {r['cosine_min']:>9.6f} {r['top10_agreement']:>7.4f}")
    print(f"reference: {ref_name}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
