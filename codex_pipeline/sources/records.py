"""Structured landing records: JSON Lines / CSV readers and a typed, pandera-validated schema.

Every structured dataset declares its input contract as a :class:`RecordSchema` of
named, typed :class:`Field` s. Validation runs the schema's element-wise checks (the
ones :meth:`RecordSchema.pandera_schema` declares to pandera) column by column over all
records of a day, so one bad record is rejected (with every problem it has, by field)
while the valid ones still land.
"""

from __future__ import annotations

import datetime as dt
import functools
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


def _never(v: Any) -> bool:
    return False


def _is_text(v: Any) -> bool:
    return v.__class__ is str and v != ""


_FAST_TYPE: dict[str, Callable[[Any], bool]] = {  # True only where TYPE_CHECKS[type] surely passes a present value
    "string": _is_text,
    "integer": lambda v: v.__class__ is int,
    "number": lambda v: v.__class__ is int or (v.__class__ is float and v == v),
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

    @functools.cached_property
    def column_checks(self) -> tuple[tuple[str, str, Callable[[Any], bool], Callable[[Any], bool], bool], ...]:
        """``(field, check name, predicate, fast, optional)`` per check, made once per schema.

        The same checks :meth:`pandera_schema` declares, kept as plain predicates so that
        :meth:`validate` runs them column by column without building a DataFrame (pandera's
        element-wise checks went through ``Series.map``: most of a mapped day's ingest time).
        ``fast``: a cheap test that the value passes (a non-empty ``str`` for a string field, an
        ``int`` for an integer), so the usual cell never calls the full check; ``optional``: a missing
        value passes (the check is not ``required``).
        """
        out: list[tuple[str, str, Callable[[Any], bool], Callable[[Any], bool], bool]] = []
        for f in self.fields:
            out.append((f.name, f"{'required ' if f.required else ''}{f.type}",
                        _present_and(TYPE_CHECKS[f.type], f.required), _FAST_TYPE.get(f.type, _never), not f.required))
            if f.rule:
                typed, rule = TYPE_CHECKS[f.type], f.rule[1]
                out.append((f.name, f.rule[0],
                            _present_and(lambda v, typed=typed, rule=rule: not typed(v) or rule(v), False), _never, True))  # type: ignore[misc]
        return tuple(out)

    def validate(self, records: list[RawRecord]) -> tuple[list[RawRecord], list[Reject]]:
        """Valid records in input order, and one reject per invalid record listing its problems.

        Column-wise checks of :attr:`column_checks`; the reasons are the ones pandera gives for
        :meth:`pandera_schema` (``field 'x' fails 'required date' (got '…')``), which a test holds.
        """
        if not records:
            return [], []
        known = frozenset(f.name for f in self.fields)
        datas = [r.data for r in records]
        problems: dict[int, list[str]] = {}
        for name, check_name, check, fast, optional in self.column_checks:  # optional: None passes
            values = [d.get(name) for d in datas]
            if fast is _is_text:
                bad = [i for i, v in enumerate(values)
                       if not ((v.__class__ is str and v) or (v is None and optional) or check(v))]
            else:
                bad = [i for i, v in enumerate(values) if not ((v is None and optional) or fast(v) or check(v))]
            for i in bad:
                problems.setdefault(i, []).append(f"field {name!r} fails {check_name!r} (got {short_repr(values[i])})")
        if not self.extra_fields_allowed:
            for i, d in enumerate(datas):
                if not d.keys() <= known:
                    extra = sorted(d.keys() - known)
                    problems.setdefault(i, []).append(f"unknown field(s) {', '.join(map(repr, extra))}")
        if not problems:
            return list(records), []
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


def dedupe_by(records: Iterable[RawRecord], key: Callable[[RawRecord], str], label: str,
              seen: dict[str, str] | None = None) -> tuple[list[RawRecord], list[Reject]]:
    """Keep the first record per key; later duplicates become rejects naming the first, not dropped.

    ``seen`` (key -> where it was first met) carries the keys of earlier pages of a streamed day.
    """
    seen = {} if seen is None else seen
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
