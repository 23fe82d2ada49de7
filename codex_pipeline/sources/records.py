"""Structured landing records: JSON Lines / CSV readers and a typed, pandera-validated schema.

Every structured dataset declares its input contract as a :class:`RecordSchema` of
named, typed :class:`Field` s. Validation runs pandera over all records of a day at
once with element-wise checks, so one bad record is rejected (with every problem it
has, by field) while the valid ones still land.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.csv_rows import read_csv_file
from codex_pipeline.sources.files import landing_files, read_text
from codex_pipeline.sources.tally import count_rows

if TYPE_CHECKING:
    import pandera.pandas as pa


@dataclass(frozen=True)
class RawRecord:
    """One record as read from a landing file, before validation."""

    source_file: str
    ref: str  # "line 12", "row 7": where in the file
    data: dict[str, Any]
    order: Any = None  # a mapping's duplicates.order value: which of two rows with one id is later


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v == ""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_date(v: Any) -> bool:
    try:
        dt.date.fromisoformat(v)
        return isinstance(v, str) and len(v) == 10
    except (TypeError, ValueError):
        return False


def _is_datetime(v: Any) -> bool:
    try:
        dt.datetime.fromisoformat(v)
        return isinstance(v, str)
    except (TypeError, ValueError):
        return False


TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_int,
    "number": lambda v: (_is_int(v) or isinstance(v, float)) and not (isinstance(v, float) and math.isnan(v)),
    "boolean": lambda v: isinstance(v, bool),
    "date": _is_date,
    "datetime": _is_datetime,
    "list[string]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "list[object]": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
    "object": lambda v: isinstance(v, dict),
}


@dataclass(frozen=True)
class Field:
    """A named, typed field of a raw record (the user-facing input contract)."""

    name: str
    type: str
    required: bool = True
    description: str = ""
    # extra element-wise rule on present values: (name, predicate)
    rule: tuple[str, Callable[[Any], bool]] | None = None

    def __post_init__(self) -> None:
        if self.type not in TYPE_CHECKS:
            raise ValueError(f"field {self.name!r}: unknown type {self.type!r}")


@dataclass(frozen=True)
class RecordSchema:
    """A dataset's record fields and its id field; a field not listed is refused unless ``extra_fields_allowed``."""

    dataset: str
    id_field: str
    fields: tuple[Field, ...]
    extra_fields_allowed: bool = False

    def pandera_schema(self) -> pa.DataFrameSchema:
        """One column per field, checked value by value: present if required, of its type, its ``rule``.

        Not strict: fields not listed are found by :meth:`validate` itself.
        """
        import pandera.pandas as pa  # on first use: with typeguard, 0.4 s of every run worker's import
        columns = {}
        for f in self.fields:
            checks = [
                pa.Check(
                    _present_and(TYPE_CHECKS[f.type], f.required),
                    element_wise=True,
                    ignore_na=False,
                    name=f"{'required ' if f.required else ''}{f.type}",
                )
            ]
            if f.rule:
                typed, rule = TYPE_CHECKS[f.type], f.rule[1]
                checks.append(
                    pa.Check(
                        _present_and(lambda v, typed=typed, rule=rule: not typed(v) or rule(v), False),  # type: ignore[misc]
                        element_wise=True,
                        ignore_na=False,
                        name=f.rule[0],
                    )
                )
            columns[f.name] = pa.Column(object, checks=checks, nullable=True, required=True)
        return pa.DataFrameSchema(columns, strict=False, coerce=False)

    def validate(self, records: list[RawRecord]) -> tuple[list[RawRecord], list[Reject]]:
        """Valid records in input order, and one reject per invalid record listing its problems."""
        import pandas as pd
        import pandera.pandas as pa  # on first use, as pandas: together 0.8 s of every run worker's import
        if not records:
            return [], []
        names = [f.name for f in self.fields]
        known = set(names)
        frame = pd.DataFrame(
            {n: pd.Series([r.data.get(n) for r in records], dtype=object) for n in names}
        )
        problems: dict[int, list[str]] = {}
        try:
            self.pandera_schema().validate(frame, lazy=True)
        except pa.errors.SchemaErrors as err:
            for row in err.failure_cases.itertuples():
                if pd.isna(row.index):
                    continue
                value = records[int(row.index)].data.get(row.column)
                problems.setdefault(int(row.index), []).append(
                    f"field {row.column!r} fails {row.check!r} (got {short_repr(value)})"
                )
        if not self.extra_fields_allowed:
            for i, r in enumerate(records):
                extra = sorted(set(r.data) - known)
                if extra:
                    problems.setdefault(i, []).append(f"unknown field(s) {', '.join(map(repr, extra))}")
        valid, rejects = [], []
        for i, r in enumerate(records):
            if i in problems:
                rid = r.data.get(self.id_field)
                ref = f"{r.ref}" + (f", {self.id_field}={rid!r}" if isinstance(rid, (str, int)) else "")
                rejects.append(
                    Reject(r.source_file, "; ".join(sorted(set(problems[i]))), ref, excerpt=short_repr(r.data, 300))
                )
            else:
                valid.append(r)
        return valid, rejects

    def markdown_table(self) -> str:
        """The field table for docs/datasets.md."""
        lines = ["| field | type | required | description |", "|---|---|---|---|"]
        for f in self.fields:
            lines.append(f"| `{f.name}` | {f.type} | {'yes' if f.required else 'no'} | {f.description} |")
        return "\n".join(lines)


def _present_and(pred: Callable[[Any], bool], required: bool) -> Callable[[Any], bool]:
    def check(v: Any) -> bool:
        if _is_missing(v):
            return not required
        try:
            return bool(pred(v))
        except Exception:  # noqa: BLE001 - a crashing rule is a failed rule
            return False

    return check


def short_repr(v: Any, n: int = 80) -> str:
    """``v`` as JSON (a string as its ``repr``), cut to ``n`` characters with ``…``, for reject messages."""
    s = json.dumps(v, ensure_ascii=False, default=str) if not isinstance(v, str) else repr(v)
    return s if len(s) <= n else s[: n - 1] + "…"


def read_json_lines(path: Path, day_dir: Path) -> tuple[list[RawRecord], list[Reject]]:
    """Records of a ``.jsonl`` file; unparsable lines and non-objects become rejects."""
    rel = path.relative_to(day_dir).as_posix()
    text = read_text(path, day_dir)
    if isinstance(text, Reject):
        return [], [text]
    records, rejects = [], []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            rejects.append(Reject(rel, f"invalid JSON: {exc.msg} at column {exc.colno}", f"line {n}", line[:300]))
            continue
        if not isinstance(obj, dict):
            rejects.append(Reject(rel, f"expected a JSON object, got {type(obj).__name__}", f"line {n}", line[:300]))
            continue
        records.append(RawRecord(rel, f"line {n}", obj))
    count_rows(rel, len(records) + len(rejects))
    return records, rejects


def read_csv_rows(path: Path, day_dir: Path, delimiter: str = ",", encoding: str = "utf-8"
                  ) -> tuple[list[dict[str, str]], list[str], list[Reject]]:
    """Rows of a CSV file as dicts of strings (with their ``row N`` refs: the physical line each starts on).

    Every record is a row or a named reject (:mod:`~codex_pipeline.sources.csv_rows`); the
    file's row count goes to the raw step's tally.
    """
    got = read_csv_file(path, day_dir, delimiter, encoding)
    count_rows(got.rel, got.rows_read)
    return got.rows, got.refs, got.rejects


def read_day(
    day_dir: Path,
    readers: dict[str, Callable[[Path, Path], tuple[list[RawRecord], list[Reject]]]],
) -> tuple[list[RawRecord], list[Reject]]:
    """Read every landing file of a day with the reader for its suffix; others are rejected."""
    records: list[RawRecord] = []
    rejects: list[Reject] = []
    for path in landing_files(day_dir):
        reader = readers.get(path.suffix.lower())
        if reader is None:
            rejects.append(
                Reject(path.relative_to(day_dir).as_posix(),
                       f"unsupported file type {path.suffix or '(none)'!r}; expected one of {sorted(readers)}")
            )
            continue
        got, bad = reader(path, day_dir)
        records.extend(got)
        rejects.extend(bad)
    return records, rejects


def dedupe_by(records: Iterable[RawRecord], key: Callable[[RawRecord], str], label: str) -> tuple[list[RawRecord], list[Reject]]:
    """Keep the first record per key; later duplicates become rejects naming the first, not dropped."""
    seen: dict[str, str] = {}
    keep, rejects = [], []
    for r in records:
        k = key(r)
        if k in seen:
            rejects.append(Reject(r.source_file, f"duplicate {label} {k!r} (first at {seen[k]})", r.ref))
            continue
        seen[k] = f"{r.source_file} {r.ref}"
        keep.append(r)
    return keep, rejects


def dedupe(records: Iterable[RawRecord], id_field: str) -> tuple[list[RawRecord], list[Reject]]:
    """Keep the first record per id (:func:`dedupe_by` on ``id_field``)."""
    return dedupe_by(records, lambda r: str(r.data[id_field]), id_field)
