"""Show on a corpus that the offline encoding equals tiktoken's cl100k_base, token for token.

    python bench/verify_offline_encoding.py [CORPUS_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from codex_pipeline.core.tokens import encoding
from codex_pipeline_tests.official_tokenizer import official_cl100k

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpora"


def main() -> int:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CORPUS
    with tempfile.TemporaryDirectory() as cache:
        official = official_cl100k(Path(cache))
    offline = encoding()
    files = sorted(p for p in corpus.resolve().rglob("*") if p.is_file())
    same = tokens = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        a, b = offline.encode_ordinary(text), official.encode_ordinary(text)
        tokens += len(a)
        same += a == b
        if a != b:
            print(f"DIFFERENT: {path}")
    print(f"{same}/{len(files)} files identical ({tokens} tokens); "
          f"regex identical: {offline._pat_str == official._pat_str}; "
          f"special tokens identical: {offline._special_tokens == official._special_tokens}")
    return 0 if same == len(files) else 1


if __name__ == "__main__":
    sys.exit(main())
