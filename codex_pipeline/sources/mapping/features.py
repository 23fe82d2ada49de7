"""Where the reader and the day loader call the mapping's row features: filters, the duplicates
``order`` value, optional-field notes, and the settling of duplicate ids after validation.

One place, so the read loop (:func:`~codex_pipeline.sources.mapping.reader.mapped_reader`) and
the day loader keep a few lines of hooks each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.mapping.duplicates import order_value, settle
from codex_pipeline.sources.mapping.filters import row_filter
from codex_pipeline.sources.mapping.schema import SourceMapping
from codex_pipeline.sources.records import RawRecord
from codex_pipeline.sources.structured import RecordRules
from codex_pipeline.sources.tally import count_merged


class RowProblem(ValueError):
    """A row the mapping's own rules refuse (named row, column, rule)."""


NOTES = "__codex_notes__"  # a built record's key holding its optional-field notes (popped by the reader)
NOTE_STAGE = "note"  # rejects-table stage of a note: a value nulled, its row kept


class RowHooks:
    """A mapping's per-row features, compiled once per reader."""

    def __init__(self, m: SourceMapping) -> None:
        self.test = row_filter(m.filters)
        self.order_rule = m.duplicates.order

    def skip(self, row: Mapping[str, Any]) -> bool:
        """True when the mapping's filters leave ``row`` out."""
        return self.test is not None and not self.test(row)

    def order(self, row: Mapping[str, Any]) -> Any:
        """The row's ``duplicates.order`` value (None without one); :class:`RowProblem` naming the column."""
        if self.order_rule is None:
            return None
        col = self.order_rule.column
        try:
            return order_value(self.order_rule, row.get(col))
        except ValueError as exc:
            raise RowProblem(f"column {col!r}: {exc} (duplicates.order)") from None

    @staticmethod
    def notes(data: dict[str, Any], rel: str, ref: str) -> list[Reject]:
        """The optional-field notes the builder left in ``data`` (removed from it), as note rows."""
        return [Reject(rel, why, ref, excerpt, stage=NOTE_STAGE) for why, excerpt in data.pop(NOTES, ())]


def settle_day(m: SourceMapping, rules: RecordRules, raw: Sequence[RawRecord]) -> tuple[list[tuple[str, RawRecord]], list[Reject]]:
    """Validate a day's records and settle duplicate ids per ``m.duplicates``: ``[(id, record)]`` and the rejects.

    Rows merged into another are counted for the raw step (:func:`~codex_pipeline.sources.tally.count_merged`).
    """
    valid, bad = rules.validate(list(raw))
    id_field = rules.schema.id_field

    def rid(r: RawRecord) -> str:
        return str(r.data[id_field])

    out = settle(valid, m.duplicates, rid, rules.validate)
    for source_file, n in out.merged.items():
        count_merged(source_file, n)
    return [(rid(r), r) for r in out.kept], bad + out.rejects
