"""``codex sources check``: how an export's rows map, and which would be rejected and why, before landing.

The file is read exactly as the dataset's raw step reads a landing day (same reader,
same rules, same de-duplication), but nothing is written: the report says what would land.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_pipeline.sources.mapping.kinds import MappedDataset, kind_parts
from codex_pipeline.sources.mapping.plausible import plausibility_warnings
from codex_pipeline.sources.mapping.reader import check_crs, name_columns
from codex_pipeline.sources.mapping.schema import MappingError
from codex_pipeline.sources.records import dedupe_by
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
    rejects: list[tuple[str, str]] = field(default_factory=list)  # (ref, reason) of every rejected row
    first_rows: list[RowOutcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # implausible values that land (plausible.py)

    def as_json(self) -> dict[str, Any]:
        """The report JSON-ready; ``landed`` is named ``would_land``, ``rejected`` is the count of row rejects."""
        return {
            "mapping": self.mapping, "dataset": self.dataset, "kind": self.kind, "file": self.file,
            "file_rejects": self.file_rejects, "rows": self.rows, "would_land": self.landed,
            "rejected": len(self.rejects), "rejects": [{"ref": r, "reason": why} for r, why in self.rejects],
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
    valid, bad = parts.rules.validate(raw)
    rid = parts.rules.schema.id_field
    keep, dups = dedupe_by(valid, lambda r: str(r.data[rid]), "record id")
    rejects = name_columns(read_rejects + bad + dups, parts.columns)
    report.file_rejects = [r.reason for r in rejects if not r.record_ref]
    row_rejects = [r for r in rejects if r.record_ref]
    report.rows = tally.get(path.name, len(raw) + sum(1 for r in read_rejects if r.record_ref))
    report.landed = len(keep)
    dates = [f.name for f in parts.rules.schema.fields if f.type in ("date", "datetime")]
    report.warnings = plausibility_warnings([(r.ref, r.data) for r in keep], dates, region, c.crs if c else None)
    report.rejects = sorted(((r.record_ref or "", r.reason) for r in row_rejects), key=lambda x: _order(x[0]))
    by_ref = {_row_key(ref): why for ref, why in report.rejects}
    kept = {r.ref: r for r in keep}
    refs = sorted({r.ref for r in raw} | set(by_ref), key=_order)[:first]
    for ref in refs:
        if ref in kept:
            rec = kept[ref].data
            rendered = parts.render(rec)
            report.first_rows.append(RowOutcome(ref, rec, None, rendered if isinstance(rendered, str) else rendered.text))
        else:
            report.first_rows.append(RowOutcome(ref, None, by_ref.get(ref, "not read")))
    return report


def _order(ref: str) -> tuple[int, str]:
    head = _row_key(ref).split()
    return (int(head[1]) if len(head) == 2 and head[1].isdigit() else 1 << 30, ref)
