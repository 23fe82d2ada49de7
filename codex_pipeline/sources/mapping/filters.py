"""Row filters: a mapping's ``filters:`` keep only the rows every test passes.

A row left out is counted as filtered (the raw step's ``rows_filtered``), never as a
reject: it is a choice the mapping made, not a fault of the export, so it does not count
towards ``max_reject_ratio``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from codex_pipeline.sources.mapping.schema import FilterRule

RowTest = Callable[[Mapping[str, Any]], bool]


def _test(rule: FilterRule) -> RowTest:
    fold: Callable[[str], str] = str.casefold if rule.ignore_case else (lambda s: s)
    col = rule.column

    def text(row: Mapping[str, Any]) -> str:
        v = row.get(col)
        return "" if v is None else str(v).strip()

    if rule.regex is not None:
        rx = re.compile(rule.regex, re.I if rule.ignore_case else 0)
        return lambda row: rx.search(text(row)) is not None
    if rule.equals is not None:
        want = fold(rule.equals.strip())
        return lambda row: fold(text(row)) == want
    values = {fold(v.strip()) for v in (rule.in_ if rule.in_ is not None else rule.not_in or ())}
    inside = rule.in_ is not None
    return lambda row: (fold(text(row)) in values) == inside


def row_filter(rules: Sequence[FilterRule]) -> RowTest | None:
    """A test every rule must pass, or None when the mapping has no filters."""
    if not rules:
        return None
    tests = [_test(r) for r in rules]
    return lambda row: all(t(row) for t in tests)
