"""Summaries of a chunk table for materialization metadata, the CLI and the inspector."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def token_percentiles(tokens: list[int] | np.ndarray) -> dict[str, int]:
    """Nearest-rank p50 and p95, and the max, of token counts; all 0 when there are none."""
    if len(tokens) == 0:
        return {"p50": 0, "p95": 0, "max": 0}
    arr = np.asarray(tokens)
    return {
        "p50": int(np.percentile(arr, 50, method="nearest")),
        "p95": int(np.percentile(arr, 95, method="nearest")),
        "max": int(arr.max()),
    }


def chunk_summary(chunks: pa.Table) -> dict[str, Any]:
    """Documents, chunks by type and token percentiles (overall and per type)."""
    types = chunks.column("chunk_type").to_pylist()
    tokens = chunks.column("token_count").to_numpy()
    by_type: dict[str, int] = {}
    per_type_tokens: dict[str, list[int]] = {}
    for t, n in zip(types, tokens):
        by_type[t] = by_type.get(t, 0) + 1
        per_type_tokens.setdefault(t, []).append(int(n))
    return {
        "documents": len(pc.unique(chunks.column("doc_id"))) if chunks.num_rows else 0,
        "chunks": chunks.num_rows,
        "chunks_by_type": dict(sorted(by_type.items())),
        "tokens": token_percentiles(tokens),
        "tokens_by_type": {t: token_percentiles(v) for t, v in sorted(per_type_tokens.items())},
    }


def preview_markdown(chunks: pa.Table, limit: int = 10, width: int = 80) -> str:
    """A Markdown table of the first chunks, for the Dagster UI."""
    lines = ["| seq | doc_id | section_id | type | tokens | text |", "|---|---|---|---|---|---|"]
    for r in chunks.slice(0, limit).to_pylist():
        text = " ".join(r["chunk_text"].split())
        text = (text[: width - 1] + "…" if len(text) > width else text).replace("|", "\\|")
        lines.append(
            f"| {r['seq_index']} | {r['doc_id']} | {r['section_id']} | {r['chunk_type']} | {r['token_count']} | {text} |"
        )
    return "\n".join(lines)
