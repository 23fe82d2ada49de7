"""Rows printed for a person: an aligned table, or ``col=value`` records (``codex demo``, ``codex query``)."""

from __future__ import annotations

from collections.abc import Sequence


def print_table(cols: list[str], rows: Sequence[Sequence[object]], records: bool = False) -> None:
    """Print rows as an aligned table, or as ``col=value`` records; whitespace in strings folded."""
    rows = [tuple(" ".join(v.split()) if isinstance(v, str) else v for v in r) for r in rows]
    if records:
        for r in rows:
            print("  " + "  ".join(f"{c}={v}" for c, v in zip(cols, r)))
        if not rows:
            print("  (no rows: are embeddings materialized with this model?)")
        return
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) if rows else len(str(c)) for i, c in enumerate(cols)]
    print("  " + "  ".join(str(c).ljust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  " + "  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
    if not rows:
        print("  (no rows)")
