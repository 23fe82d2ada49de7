"""Rows sharing an id, settled after validation over the whole day: rejected, last-wins or merged.

``reject`` is the default (the first row lands, later ones are rejects naming it). ``last``
keeps the latest row by the mapping's ``order`` column (rows without a value are oldest;
ties, and no ``order``, by file order: files in name order, rows top down). ``merge``
folds the rows oldest first: a later row's fields replace earlier ones (an empty cell
never erases), and ``union`` fields gather every row's distinct values. The rows folded
into another are counted as merged, by the file they came from, so each file's rows
still add up (read = landed + rejected + merged + filtered).

Needs the day's valid records at once: a streaming reader falls back to whole-file
reading when the mode is ``last`` or ``merge``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.mapping.epochs import parse_when
from codex_pipeline.sources.mapping.schema import DuplicatesRule, OrderRule
from codex_pipeline.sources.records import RawRecord, dedupe_by

Validate = Callable[[list[RawRecord]], tuple[list[RawRecord], list[Reject]]]


@dataclass
class Settled:
    """What :func:`settle` made of a day's valid records."""

    kept: list[RawRecord]  # one per id, in the input order of the row that won
    merged: Counter[str] = field(default_factory=Counter)  # source file -> its rows folded into another
    rejects: list[Reject] = field(default_factory=list)


def order_value(rule: OrderRule, cell: Any) -> Any:
    """The comparable value of an ``order`` cell (None when empty); :class:`ValueError` when it does not read."""
    if cell is None or (isinstance(cell, str) and not cell.strip()):
        return None
    s = str(cell).strip()
    if rule.type == "string":
        return s
    if rule.type in ("integer", "number"):
        try:
            return int(s) if rule.type == "integer" else float(s)
        except ValueError:
            raise ValueError(f"{s!r} is not a{'n' if rule.type == 'integer' else ''} {rule.type}") from None
    for fmt in rule.formats or ("iso",):
        try:
            when = parse_when(s, fmt)
        except ValueError:
            continue
        if when.tzinfo is not None:  # aware and naive values compare: aware ones as UTC wall time
            when = when.astimezone(dt.UTC).replace(tzinfo=None)
        return when.date() if rule.type == "date" else when
    raise ValueError(f"{s!r} is not a {rule.type} in formats {list(rule.formats or ('iso',))}")


def settle(records: Sequence[RawRecord], rule: DuplicatesRule, id_of: Callable[[RawRecord], str],
           validate: Validate | None = None, label: str = "record id") -> Settled:
    """One record per id from ``records`` (valid, in file order), per ``rule.mode``.

    ``validate`` re-checks merged records (a union can outgrow a field's limit): one that
    fails is a reject standing for the row that won.
    """
    if rule.mode == "reject":
        keep, rejects = dedupe_by(records, id_of, label)
        return Settled(keep, Counter(), rejects)
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault(id_of(r), []).append(i)
    out: dict[int, RawRecord] = {}
    merged: Counter[str] = Counter()
    to_check: list[int] = []
    for idx in groups.values():
        if len(idx) == 1:
            out[idx[0]] = records[idx[0]]
            continue
        ranked = sorted(idx, key=lambda i: _rank(records[i], i))
        last = records[ranked[-1]]
        for i in ranked[:-1]:
            merged[records[i].source_file] += 1
        if rule.mode == "last":
            out[ranked[-1]] = last
            continue
        data: dict[str, Any] = {}
        for i in ranked:
            for k, v in records[i].data.items():
                data[k] = _union(data.get(k), v) if k in rule.union and k in data else v
        out[ranked[-1]] = RawRecord(last.source_file, last.ref, data, last.order)
        to_check.append(ranked[-1])
    rejects = []
    if validate is not None and to_check:
        _, bad = validate([out[i] for i in to_check])
        failed = {(b.source_file, (b.record_ref or "").split(",", 1)[0]) for b in bad}
        for i in to_check:
            if (out[i].source_file, out[i].ref) in failed:
                del out[i]
        rejects = [Reject(b.source_file, f"merged record: {b.reason}", b.record_ref, b.excerpt) for b in bad]
    return Settled([out[i] for i in sorted(out)], merged, rejects)


def _rank(r: RawRecord, i: int) -> tuple[Any, ...]:
    return (0, 0, i) if r.order is None else (1, r.order, i)


def _union(old: Any, new: Any) -> Any:
    """Both values, without repeats: lists concatenated; text as ``"a; b"``."""
    if isinstance(old, list) or isinstance(new, list):
        items = (old if isinstance(old, list) else [old]) + (new if isinstance(new, list) else [new])
        seen: dict[str, Any] = {}
        for item in items:
            seen.setdefault(json.dumps(item, sort_keys=True, default=str), item)
        return list(seen.values())
    if isinstance(old, str) and isinstance(new, str):
        parts = [p for p in old.split("; ") if p]
        return "; ".join(parts + [new] if new not in parts else parts)
    return new
