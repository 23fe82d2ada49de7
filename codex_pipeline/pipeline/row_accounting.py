"""Every input row of a landing day accounted for: read = landed + rejected + merged + filtered, file by file.

Row readers report each file's row count (:mod:`~codex_pipeline.sources.tally`); the raw
step counts the documents it kept per file and the ingest rejects per file (a whole file
rejected after reading stands for all its rows). A file whose counts do not add up would
be rows lost without a word, so the step fails naming the file instead. A dataset with a
``max_reject_ratio`` (every mapped dataset) also fails a day whose rejected share is over
it, and a day where rows were read and none landed, whatever the ratio. Rows a mapping's
``duplicates:`` folded into another row are ``merged``, rows its ``filters:`` left out are
``filtered``: both accounted for, neither a reject; filtered rows are not judged by the ratio.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.tally import Tally


class RawDayFailed(RuntimeError):
    """A raw step that must not report ok: one line naming the dataset, the day, the counts and the fix."""


@dataclass(frozen=True)
class FileRows:
    """One landing file's rows: read by its reader, landed in ``raw``, rejected by name."""

    file: str
    read: int
    landed: int
    rejected: int
    merged: int = 0  # folded into a later row with the same id
    filtered: int = 0  # left out by the mapping's filters

    @property
    def balanced(self) -> bool:
        """True when every row read landed, was rejected, merged or filtered."""
        return self.read == self.landed + self.rejected + self.merged + self.filtered


@dataclass(frozen=True)
class RowAccount:
    """A day's row-reading files and their counts, in file order."""

    files: tuple[FileRows, ...] = ()

    @property
    def read(self) -> int:
        """Rows read over the day's files."""
        return sum(f.read for f in self.files)

    @property
    def landed(self) -> int:
        """Rows that landed as documents."""
        return sum(f.landed for f in self.files)

    @property
    def rejected(self) -> int:
        """Rows rejected by name (rows of a whole file rejected included)."""
        return sum(f.rejected for f in self.files)

    @property
    def merged(self) -> int:
        """Rows folded into another row with their id."""
        return sum(f.merged for f in self.files)

    @property
    def filtered(self) -> int:
        """Rows the mapping's filters left out."""
        return sum(f.filtered for f in self.files)

    def as_metadata(self) -> dict[str, int]:
        """The day's totals, for the raw step's metadata."""
        return {"rows_read": self.read, "rows_landed": self.landed, "rows_rejected": self.rejected,
                "rows_merged": self.merged, "rows_filtered": self.filtered}

    def markdown(self) -> str:
        """A Markdown table of the files and their counts (empty when no file reads rows)."""
        if not self.files:
            return ""
        lines = ["| file | rows read | landed | rejected | merged | filtered |", "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {_cell(f.file)} | {f.read} | {f.landed} | {f.rejected} | {f.merged} | {f.filtered} |"
                  for f in self.files]
        return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def account_rows(tally: Mapping[str, int], landed: Mapping[str, int], rejects: Iterable[Reject]) -> RowAccount:
    """The counts of every file a row reader reported, from the documents kept and the ingest rejects."""
    rejected: Counter[str] = Counter()
    for r in rejects:
        if r.stage == "ingest" and r.source_file in tally:
            rejected[r.source_file] += r.rows
    merged = tally.merged if isinstance(tally, Tally) else {}
    filtered = tally.filtered if isinstance(tally, Tally) else {}
    return RowAccount(tuple(FileRows(f, tally[f], landed.get(f, 0), rejected[f], merged.get(f, 0), filtered.get(f, 0))
                            for f in sorted(tally)))


def check_rows(account: RowAccount, dataset: str, day: dt.date, max_reject_ratio: float | None,
               mapping: Path | None = None) -> None:
    """:class:`RawDayFailed` when a file's rows do not add up, or the day's rejects are over the ratio."""
    where = f"{dataset} {day}"
    for f in account.files:
        if not f.balanced:
            lost = f.read - f.landed - f.rejected - f.merged - f.filtered
            raise RawDayFailed(
                f"{where}: {f.file}: {f.read} row(s) read but {f.landed} landed, {f.rejected} rejected, "
                f"{f.merged} merged and {f.filtered} filtered "
                f"({abs(lost)} {'unaccounted for' if lost > 0 else 'counted twice'}); nothing was published for "
                "the day: a bug in the reader, please report it with the file")
    judged = account.read - account.filtered  # rows the mapping chose to leave out are not the export's fault
    if max_reject_ratio is None or not judged:
        return
    share = account.rejected / judged
    if account.landed and share <= max_reject_ratio:
        return
    setting = f"max_reject_ratio in {mapping.name}" if mapping else "max_reject_ratio"
    raise RawDayFailed(
        f"{where}: {account.rejected} of {judged} row(s) rejected ({share:.0%}), "
        + (f"over {setting} ({max_reject_ratio:g})" if account.landed else "none landed")
        + f"; see why in codex.{dataset}_rejects, then fix the export or the mapping"
        + (f" (or raise {setting})" if account.landed else "") + " and materialize the day again")
