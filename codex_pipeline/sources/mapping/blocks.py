"""Repeated column blocks (``CONTRACTOR_1_NAME`` … ``CONTRACTOR_15_PHONE``) as one list field.

Exports flatten a list into numbered column groups; a ``block:`` rule reads them back as
a list of objects, one per block that has any value, in block order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from codex_pipeline.sources.mapping.schema import BlockRule
from codex_pipeline.sources.structured import one_line_text


def block_objects(rule: BlockRule, cell: Callable[[str], Any]) -> list[dict[str, str]]:
    """One ``{key: value}`` per block with a value (empty cells left out); ``cell(column)`` reads a cell."""
    out = []
    for n in range(rule.first, rule.last + 1):
        obj = {}
        for key, part in rule.parts.items():
            v = cell(rule.column(n, part))
            text = one_line_text(str(v)) if v is not None else ""
            if text:
                obj[key] = text
        if obj:
            out.append(obj)
    return out


def block_value(rule: BlockRule, cell: Callable[[str], Any], target_type: str) -> Any:
    """The blocks as the target wants them: a list of objects (``list[object]``), else each block's
    values joined ``", "`` (a ``list[string]``, or one string with blocks joined ``"; "``); None when none."""
    objs = block_objects(rule, cell)
    if not objs:
        return None
    if target_type == "list[object]":
        return objs
    texts = [", ".join(o.values()) for o in objs]
    return texts if target_type == "list[string]" else "; ".join(texts)
