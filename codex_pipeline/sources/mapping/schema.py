"""The mapping file format: a pydantic model, and one-line errors that name the key and the fix.

A mapping is trusted configuration (it names columns, never paths), validated when
loaded so that a mistake fails the code location's load with the file, the key and what
to write instead, rather than rejecting every row of a landing day.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

FORMAT_VERSION = 1
DATASET_NAME = r"^[a-z][a-z0-9_]{1,62}$"
FIELD_NAME = r"^[a-z][a-z0-9_]{0,62}$"
RecordKind = Literal["permit", "event", "record"]
ValueType = Literal["string", "text", "integer", "number", "boolean", "date", "datetime", "list[string]", "list[object]"]


class MappingError(ValueError):
    """A mapping file that cannot be used: one line naming the file, the key and the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)


class _Loader(yaml.SafeLoader):
    """YAML 1.2 booleans: only true/false. Column names such as ``No``, ``Y`` or ``On`` stay strings."""


class DuplicateKey(yaml.MarkedYAMLError):
    """A key given twice in one YAML mapping: PyYAML keeps the last silently, a mapping must not."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise DuplicateKey(problem=f"key {key!r} is given twice (lines {seen[key]} and {line})",
                               problem_mark=key_node.start_mark)
        seen[key] = line
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"] for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


class BlockRule(_Strict):
    """Repeated column blocks (``CONTRACTOR_1_NAME`` … ``CONTRACTOR_15_PHONE``) read as one list of objects.

    ``pattern`` names each column with ``{n}`` (the block's number, ``first`` … ``last``)
    and ``{part}``; ``parts`` maps each object key to its ``{part}`` text (a list: the key
    is the part in snake_case). A block whose cells are all empty is skipped.
    """

    pattern: str
    first: int = Field(1, ge=0)
    last: int = Field(ge=0)
    parts: dict[str, str]

    @model_validator(mode="before")
    @classmethod
    def _part_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("parts"), (list, tuple)):
            data = dict(data) | {"parts": {re.sub(r"[^a-z0-9]+", "_", str(p).lower()).strip("_"): str(p)
                                           for p in data["parts"]}}
        return data

    @model_validator(mode="after")
    def _shape(self) -> BlockRule:
        if "{n}" not in self.pattern or "{part}" not in self.pattern:
            raise ValueError(f"block pattern {self.pattern!r} needs both {{n}} and {{part}}, e.g. 'CONTRACTOR_{{n}}_{{part}}'")
        if self.last < self.first:
            raise ValueError(f"block last ({self.last}) is before first ({self.first})")
        if not self.parts:
            raise ValueError("block parts is empty: list the {part} names, e.g. [NAME, TYPE]")
        return self

    def column(self, n: int, part: str) -> str:
        """The export column of block ``n``'s ``part``."""
        return self.pattern.replace("{n}", str(n)).replace("{part}", part)

    def columns(self) -> tuple[str, ...]:
        """Every column of every block, block by block."""
        return tuple(self.column(n, p) for n in range(self.first, self.last + 1) for p in self.parts.values())


class FieldRule(_Strict):
    """Where one target field's value comes from. A bare string in YAML is ``{column: …}``."""

    column: str | None = None  # one source column
    columns: tuple[str, ...] = ()  # several columns joined (address parts): empty ones skipped
    join: str = " "  # between the parts of ``columns``
    value: str | None = None  # a constant instead of a column
    block: BlockRule | None = None  # repeated column blocks -> a list of objects
    optional: bool = False  # a value that does not convert is nulled and noted (stage 'note'), the row kept
    type: ValueType | None = None  # record kind only (a permit field has its schema's type)
    formats: tuple[str, ...] = ()  # dates: strptime formats (or "iso") tried in order; none: ISO 8601 dates
    strip: str = ""  # numbers: characters removed before converting, e.g. "$," for "$1,250.00"
    decimal: str = Field(".", min_length=1, max_length=1)  # numbers: the decimal mark, "," for "7,5"
    separator: str | None = None  # a multi-value cell: split here, parts joined with "; " (or a list)
    vocabulary: dict[str, str] | None = None  # cell value -> value recorded (e.g. status codes)
    unknown: Literal["keep", "reject"] = "keep"  # a value missing from the vocabulary
    timezone: str | None = None  # date-times without an offset are in this IANA zone, e.g. America/Vancouver

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"column": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _one_source(self) -> FieldRule:
        given = [k for k, v in (("column", self.column), ("columns", self.columns), ("value", self.value),
                                ("block", self.block)) if v]
        if len(given) != 1:
            raise ValueError(f"give exactly one of column, columns, value, block (got {', '.join(given) or 'none'})")
        if self.unknown == "reject" and not self.vocabulary:
            raise ValueError("unknown: reject needs a vocabulary")
        if self.timezone is not None:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                ZoneInfo(self.timezone)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {self.timezone!r} (an IANA name such as America/Vancouver)") from None
        return self

    def source_columns(self) -> tuple[str, ...]:
        """The export columns the rule reads; ``()`` for a constant ``value``."""
        if self.block is not None:
            return self.block.columns()
        return (self.column,) if self.column else self.columns


class ScopeRule(_Strict):
    """Permit scope sections cut from one column.

    ``items``: every part is a scope item. ``code_list``: only when the cell is a list of
    codes (every part a known code, or the compact ``A,B,C`` shape), else it stays prose.
    ``bullets``: text before the first separator is the lead (it stays in the summary
    when ``summary`` maps the same column); every later part is a scope section.
    """

    column: str
    separator: str = ","
    mode: Literal["items", "code_list", "bullets"] = "items"
    codes: dict[str, str] = {}  # abbreviation (any case) -> scope title


class ConditionRule(_Strict):
    """Permit conditions from one column, one condition per part."""

    column: str
    separator: str = ";"


class Coordinates(_Strict):
    """x / y columns (or one ``point`` column) in ``crs``, converted to WGS 84 latitude / longitude (pyproj).

    ``point``: a WKT ``POINT (x y)``, a ``(lat, lon)`` pair or a GeoJSON point, in one cell.
    """

    x: str | None = None
    y: str | None = None
    point: str | None = None
    crs: str = "EPSG:4326"

    @model_validator(mode="after")
    def _columns(self) -> Coordinates:
        if self.point is not None and (self.x is not None or self.y is not None):
            raise ValueError("give either point or x and y, not both")
        if self.point is None and (self.x is None or self.y is None):
            raise ValueError("give x and y (two columns), or point (one column)")
        return self

    def source_columns(self) -> tuple[str, ...]:
        """The export columns the coordinates come from."""
        return (self.point,) if self.point is not None else (str(self.x), str(self.y))


class FilterRule(_Strict):
    """Keep only rows whose ``column`` passes one test; rows left out are counted as filtered, not rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True, populate_by_name=True)

    column: str
    equals: str | None = None
    in_: tuple[str, ...] | None = Field(None, alias="in")
    not_in: tuple[str, ...] | None = None
    regex: str | None = None  # searched anywhere in the cell: anchor it (^…$) for the whole cell
    ignore_case: bool = False

    @model_validator(mode="after")
    def _one_test(self) -> FilterRule:
        given = [k for k, v in (("equals", self.equals), ("in", self.in_), ("not_in", self.not_in),
                                ("regex", self.regex)) if v is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of equals, in, not_in, regex (got {', '.join(given) or 'none'})")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"regex {self.regex!r} does not compile: {exc}") from None
        return self


class OrderRule(_Strict):
    """The column that says which of two rows with one id is later (duplicates last / merge)."""

    column: str
    type: Literal["string", "integer", "number", "date", "datetime"] = "string"  # string: compared as text (ISO dates sort)
    formats: tuple[str, ...] = ()  # date / datetime: as a field's formats (strptime, iso, epoch_s, epoch_ms)


class DuplicatesRule(_Strict):
    """What rows sharing an id make: ``reject`` (the first lands, later ones are rejects), ``last`` (the
    latest by ``order``, ties by file order, lands), ``merge`` (later non-empty fields win; ``union`` fields
    gather every row's values)."""

    mode: Literal["reject", "last", "merge"] = "reject"
    order: OrderRule | None = None  # none: file order
    union: tuple[str, ...] = ()  # merge: fields whose values from every row are kept (as a list, or "; "-joined)

    @model_validator(mode="after")
    def _fits_mode(self) -> DuplicatesRule:
        if self.mode == "reject" and (self.order is not None or self.union):
            raise ValueError("order and union need mode: last or merge")
        if self.union and self.mode != "merge":
            raise ValueError("union needs mode: merge")
        return self


class RecordView(_Strict):
    """How a record without free text is rendered: ``## {label} {id} — {title field}`` then its fields."""

    label: str = "Record"
    title: str | None = None  # a target field shown in the heading


class SourceMapping(_Strict):
    """One mapping file, validated: which export, read how, and which columns fill which fields.

    Unknown keys are refused (a misspelt key is an error, not a default).
    """

    codex_mapping: Literal[1]  # the format version
    dataset: str = Field(pattern=DATASET_NAME)
    kind: RecordKind
    title: str = Field(min_length=1, max_length=120)  # what the export is, e.g. "Seattle SDCI pre-application"
    description: str = ""
    format: Literal["csv", "jsonl", "json"] = "csv"
    delimiter: str = Field(",", min_length=1, max_length=1)  # csv: ";" or "\t" for some exports
    encoding: str = "utf-8"  # csv: e.g. cp1252 / latin-1 for older exports (a BOM is dropped)
    id: str  # the column holding the record id
    id_clean: bool = False  # ids with spaces, slashes …: each run of other characters becomes "-"
    fields: dict[str, FieldRule] = {}
    details: dict[str, FieldRule] = {}  # permit: extra ``Label: value`` lines of the envelope
    scope: ScopeRule | None = None
    conditions: ConditionRule | None = None
    coordinates: Coordinates | None = None
    filters: tuple[FilterRule, ...] = ()  # every one must pass for a row to be read
    duplicates: DuplicatesRule = DuplicatesRule()
    empty_values: tuple[str, ...] = ("",)  # cells (stripped) that mean "no value"
    drop: tuple[str, ...] = ()  # columns present in the export and deliberately unused
    unexpected_columns: Literal["reject", "ignore"] = "reject"
    view: RecordView = RecordView()
    propositions: bool | None = None  # None: on for permits, off for record views
    # a landing day whose rejected share of rows read is over this fails its raw step (none landed: always fails)
    max_reject_ratio: float = Field(0.5, ge=0, le=1)

    @field_validator("fields")
    @classmethod
    def _field_names(cls, v: dict[str, FieldRule]) -> dict[str, FieldRule]:
        bad = [k for k in v if not re.match(FIELD_NAME, k)]
        if bad:
            raise ValueError(f"field name {bad[0]!r} is not snake_case (a-z, 0-9, _)")
        return v

    @model_validator(mode="after")
    def _union_fields(self) -> SourceMapping:
        missing = [f for f in self.duplicates.union if f not in self.fields]
        if missing:
            raise ValueError(f"duplicates.union names {missing[0]!r}, not a field under fields:")
        return self

    def columns(self) -> list[str]:
        """Every column the mapping reads or drops, in mapping order, without repeats."""
        cols: list[str] = [self.id]
        for rule in (*self.fields.values(), *self.details.values()):
            cols += rule.source_columns()
        for extra in (self.scope, self.conditions):
            if extra is not None:
                cols.append(extra.column)
        if self.coordinates is not None:
            cols += self.coordinates.source_columns()
        cols += [f.column for f in self.filters]
        if self.duplicates.order is not None:
            cols.append(self.duplicates.order.column)
        return list(dict.fromkeys(cols + list(self.drop)))


_FIXES = {
    "extra_forbidden": "remove it or fix its spelling",
    "missing": "add it",
    "literal_error": "use one of the values named",
    "string_pattern_mismatch": "use lowercase letters, digits and _ (start with a letter)",
}


def _one_line(path: str, err: ValidationError) -> str:
    e = err.errors()[0]
    key = ".".join(str(p) for p in e["loc"] if not str(p).startswith("function-")) or "(top level)"
    fix = _FIXES.get(e["type"], "see docs/datasets/mappings.md")
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"mapping {path}: key {key!r}: {e['msg']}; fix: {fix}{more}"


def parse_mapping(text: str, path: str) -> SourceMapping:
    """A mapping from YAML text; :class:`MappingError` names the file, the key and the fix."""
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except DuplicateKey as exc:
        raise MappingError(f"mapping {path}, line {exc.problem_mark.line + 1}: {exc.problem}; "  # type: ignore[union-attr]
                           "fix: keep one of them (YAML would silently use the last)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise MappingError(f"mapping {path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}; fix the syntax") from None
    if not isinstance(data, dict):
        raise MappingError(f"mapping {path}: expected a YAML mapping of keys (codex_mapping: 1, dataset: …, kind: …)")
    try:
        mapping = SourceMapping.model_validate(data)
    except ValidationError as exc:
        raise MappingError(_one_line(path, exc)) from None
    order = mapping.duplicates.order
    checked = [(f"fields.{k}", r.formats) for k, r in mapping.fields.items()]
    for key, formats in checked + ([("duplicates.order", order.formats)] if order else []):
        for fmt in formats:
            if "%" not in fmt and fmt not in ("iso", "epoch_s", "epoch_ms"):
                raise MappingError(f"mapping {path}: key '{key}.formats': {fmt!r} has no % directive; "
                                   "fix: write strptime formats such as '%m/%d/%Y', or iso, epoch_s, epoch_ms")
            if "%" in fmt:
                dt.datetime(2001, 2, 3).strftime(fmt)
    return mapping


_KEY = re.compile(r"key '([^']+)'")


def with_line(exc: MappingError, path: Path | str, text: str) -> MappingError:
    """``exc`` with the line of the key it names: ``mapping FILE, line N: key 'a.b': …`` (unchanged when not found)."""
    msg = str(exc)
    head = f"mapping {path}: "
    found = _KEY.search(msg)
    if not msg.startswith(head) or found is None:
        return exc
    line = _key_line(text, found.group(1).split("."))
    return MappingError(f"mapping {path}, line {line}: {msg[len(head):]}") if line else exc


def _key_line(text: str, parts: list[str]) -> int | None:
    """The line of the deepest key of ``parts`` found in the YAML ``text`` (None: not even the first)."""
    try:
        node = yaml.compose(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        return None
    line = None
    for part in parts:
        if not isinstance(node, yaml.MappingNode):
            break
        hit = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
        if hit is None:
            break
        line, node = hit[0].start_mark.line + 1, hit[1]
    return line


def load_mapping(path: Path) -> SourceMapping:
    """The mapping file at ``path``; :class:`MappingError` when it is unreadable or wrong (:func:`parse_mapping`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MappingError(f"mapping {path}: cannot read it ({exc}); fix: give a readable UTF-8 YAML file") from None
    try:
        return parse_mapping(text, str(path))
    except MappingError as exc:
        raise with_line(exc, path, text) from None


def mapping_digest(mapping: SourceMapping) -> str:
    """First 8 hex of the SHA-256 of what the mapping says (not its comments, layout or keys left
    at their defaults, so a new optional key in Codex changes no digest): an edited mapping is a
    new ``source_version``, so the version sensor re-ingests."""
    return hashlib.sha256(mapping.model_dump_json(exclude_defaults=True).encode()).hexdigest()[:8]
