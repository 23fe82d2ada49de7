"""``codex sources check``: how an export's rows map, and which would be rejected and why, before landing.

The file is read exactly as the dataset's raw step reads a landing day (same reader,
same rules, same de-duplication), but nothing is written: the report says what would land.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_pipeline.sources.mapping.features import NOTE_STAGE, settle_day
from codex_pipeline.sources.mapping.kinds import MappedDataset, kind_parts
from codex_pipeline.sources.mapping.plausible import plausibility_warnings
from codex_pipeline.sources.mapping.reader import check_crs, name_columns
from codex_pipeline.sources.mapping.schema import MappingError
from codex_pipeline.sources.tally import counting_rows


@dataclass
class RowOutcome:
    """What one row would become: its record and canonical text if it lands, else the reject reason."""

    ref: str  # "row 2"
    record: dict[str, Any] | None  # the mapped record when it would land
    reject: str | None  # else why not
    text: str | None = None  # the canonical text (what the chunks are cut from)


@dataclass
class CheckReport:
    """What :func:`check_file` found: row counts, every reject, and the outcome of the first rows."""

    mapping: str
    dataset: str
    kind: str
    file: str
    file_rejects: list[str] = field(default_factory=list)  # the whole file (header, unreadable, …)
    rows: int = 0
    landed: int = 0
    merged: int = 0  # rows folded into a later row with their id (duplicates: last / merge)
    filtered: int = 0  # rows the mapping's filters leave out
    notes: list[tuple[str, str]] = field(default_factory=list)  # (ref, note) of optional values nulled
    rejects: list[tuple[str, str]] = field(default_factory=list)  # (ref, reason) of every rejected row
    first_rows: list[RowOutcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # implausible values that land (plausible.py)

    def as_json(self) -> dict[str, Any]:
        """The report JSON-ready; ``landed`` is named ``would_land``, ``rejected`` is the count of row rejects.

        ``rows`` = ``would_land`` + ``rejected`` + ``merged`` + ``filtered`` (a whole-file reject aside).
        """
        return {
            "mapping": self.mapping, "dataset": self.dataset, "kind": self.kind, "file": self.file,
            "file_rejects": self.file_rejects, "rows": self.rows, "would_land": self.landed,
            "rejected": len(self.rejects), "merged": self.merged, "filtered": self.filtered,
            "rejects": [{"ref": r, "reason": why} for r, why in self.rejects],
            "notes": [{"ref": r, "note": why} for r, why in self.notes],
            "first_rows": [vars(o) for o in self.first_rows], "warnings": self.warnings,
        }


def _row_key(ref: str | None) -> str:
    return (ref or "").split(",", 1)[0]


def check_file(md: MappedDataset, path: Path, first: int = 5,
               region: tuple[float, float, float, float] | None = None) -> CheckReport:
    """Read ``path`` through the mapping; the first ``first`` rows' outcomes, every reject, and warnings
    on implausible values (points outside ``region`` or far from the others, odd dates, mojibake)."""
    c = md.mapping.coordinates
    if c is not None and (why := check_crs(c.crs, with_proj=True)):
        raise MappingError(f"mapping {md.path}: key 'coordinates.crs': {why}; fix: an EPSG code such as EPSG:3857")
    parts = kind_parts(md.mapping, md.name)
    report = CheckReport(str(md.path), md.name, md.mapping.kind, str(path))
    with counting_rows() as tally:
        raw, read_rejects = parts.reader(path, path.parent)
        settled, bad = settle_day(md.mapping, parts.rules, raw)
    keep = [r for _, r in settled]
    report.merged, report.filtered = sum(tally.merged.values()), sum(tally.filtered.values())
    notes = [r for r in read_rejects if r.stage == NOTE_STAGE]
    report.notes = sorted(((r.record_ref or "", r.reason) for r in notes), key=lambda x: _order(x[0]))
    rejects = name_columns([r for r in read_rejects if r.stage != NOTE_STAGE] + bad, parts.columns)
    report.file_rejects = [r.reason for r in rejects if not r.record_ref]
    row_rejects = [r for r in rejects if r.record_ref]
    report.rows = tally.get(path.name, len(raw) + sum(1 for r in read_rejects if r.record_ref and r.stage != NOTE_STAGE))
    report.landed = len(keep)
    dates = [f.name for f in parts.rules.schema.fields if f.type in ("date", "datetime")]
    report.warnings = plausibility_warnings([(r.ref, r.data) for r in keep], dates, region, c.crs if c else None)
    report.rejects = sorted(((r.record_ref or "", r.reason) for r in row_rejects), key=lambda x: _order(x[0]))
    by_ref = {_row_key(ref): why for ref, why in report.rejects}
    kept = {r.ref: r for r in keep}
    raw_refs = {r.ref for r in raw}
    refs = sorted(raw_refs | set(by_ref), key=_order)[:first]
    for ref in refs:
        if ref in kept:
            rec = kept[ref].data
            rendered = parts.render(rec)
            report.first_rows.append(RowOutcome(ref, rec, None, rendered if isinstance(rendered, str) else rendered.text))
        else:
            why = by_ref.get(ref) or ("merged into a later row with its id (duplicates)" if ref in raw_refs else "not read")
            report.first_rows.append(RowOutcome(ref, None, why))
    return report


def _order(ref: str) -> tuple[int, str]:
    head = _row_key(ref).split()
    return (int(head[1]) if len(head) == 2 and head[1].isdigit() else 1 << 30, ref)
