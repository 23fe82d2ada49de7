"""``python -m codex_pipeline_tests.embeddings.embed_child CKPT_DIR N PAUSE_AFTER MARKER``.

Embeds ``sample_texts(N)`` (batches of 2) into the checkpoint ``CKPT_DIR`` (policy
from the environment) and stops for good after ``PAUSE_AFTER`` batches, for the
parent to SIGKILL. The embedder is the tests' fake unless ``$CODEX_TEST_EMBEDDER=real``
asks for the local model (``fakes.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa

from codex_pipeline.embeddings.reuse import EmbeddingCheckpoint, embed_partition
from codex_pipeline.settings import CodexSettings
from codex_pipeline_tests.embeddings.pausing import PausingEmbedder, sample_texts
from codex_pipeline_tests.fakes import child_embedder


def chunks_table(texts: list[str]) -> pa.Table:
    return pa.table({"chunk_id": [f"chunk-{i:04d}" for i in range(len(texts))], "chunk_text": texts})


def main(argv: list[str]) -> None:
    ckpt_dir, n, pause_after, marker = argv
    embedder = PausingEmbedder(child_embedder(batch_size=2), int(pause_after), Path(marker))
    embed_partition(chunks_table(sample_texts(int(n))), embedder, checkpoint=EmbeddingCheckpoint(ckpt_dir, CodexSettings.from_env(os.environ).steps.checkpoint))


if __name__ == "__main__":
    main(sys.argv[1:])
