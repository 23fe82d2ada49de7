"""Record kinds a mapping targets, and a mapped dataset's loader.

``permit``: the ``permit_signals`` schema (summary, scope sections, conditions; its
canonical text and chunk tree). ``event``: the ``events_timeline`` schema (a header and
a description, one ``event`` chunk, long descriptions windowed). ``record``: a generic record of the mapping's own fields
rendered as the Markdown key-value view ``urban_signal_grid`` uses, for exports without
free text (one ``record_view`` chunk per row).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import LoadResult, Reject, SourceDocument
from codex_pipeline.sources.events import EVENT_RULES, EVENT_SCHEMA, render_event
from codex_pipeline.sources.mapping.features import settle_day
from codex_pipeline.sources.mapping.reader import (
    SUFFIXES,
    RowMapper,
    Target,
    check_crs,
    field_columns,
    mapped_reader,
    name_columns,
)
from codex_pipeline.sources.mapping.schema import MappingError, SourceMapping, load_mapping, mapping_digest, with_line
from codex_pipeline.sources.mapping.stream import iter_mapped_day
from codex_pipeline.sources.permits import (
    PERMIT_RULES,
    check_permit_mapping,
    permit_builder,
    permit_title,
    render_permit,
)
from codex_pipeline.sources.records import Field, RawRecord, RecordSchema, read_day
from codex_pipeline.sources.structured import (
    LATITUDE_RULE,
    LONGITUDE_RULE,
    RECORD_ID_RULE,
    RecordRules,
    Rendering,
    build_documents,
    fmt_scalar,
    is_blank,
    one_line_text,
    render_kv_view,
)

RECORD_ID_FIELD = "record_id"


def record_fields(m: SourceMapping) -> tuple[Field, ...]:
    """The record kind's schema: the id, the mapped fields in mapping order, then the coordinates."""
    out = [Field(RECORD_ID_FIELD, "string", True, f"Record id (column {m.id!r}).", RECORD_ID_RULE)]
    for name, rule in m.fields.items():
        type_ = rule.type or ("list[object]" if rule.block is not None else "string")
        out.append(Field(name, "string" if type_ == "text" else type_, False, f"From {'+'.join(rule.source_columns()) or 'a constant'}."))
    if m.coordinates is not None:
        out += [Field("latitude", "number", False, "Latitude (WGS 84).", LATITUDE_RULE),
                Field("longitude", "number", False, "Longitude (WGS 84).", LONGITUDE_RULE)]
    return tuple(out)


EVENT_TARGETS = {f.name: Target(f.type, multiline=f.name == "description", rule=f.rule) for f in EVENT_SCHEMA.fields
                 if f.name != "event_id"}
EVENT_REQUIRED = [f.name for f in EVENT_SCHEMA.fields if f.required and f.name != "event_id"]


def check_event_mapping(m: SourceMapping, path: str) -> None:
    """:class:`MappingError` unless the mapping suits kind event.

    No permit-only keys, only event fields, every required one mapped, a known CRS.
    """
    for key in ("scope", "conditions", "details"):
        if getattr(m, key):
            raise MappingError(f"mapping {path}: key {key!r}: only kind permit has {key}; fix: remove it")
    for name in m.fields:
        if name not in EVENT_TARGETS:
            raise MappingError(f"mapping {path}: key 'fields.{name}': not an event field; "
                               f"fix: use one of {', '.join(EVENT_TARGETS)}")
    for name in EVENT_REQUIRED:
        if name not in m.fields:
            raise MappingError(f"mapping {path}: key 'fields.{name}' is required for kind event; "
                               f"fix: map it to a column ({name}: <column>) or give a constant ({name}: {{value: …}})")
    if m.coordinates is not None and (why := check_crs(m.coordinates.crs)):
        raise MappingError(f"mapping {path}: key 'coordinates.crs': {why}; fix: an EPSG code such as EPSG:3857")


def check_record_mapping(m: SourceMapping, path: str) -> None:
    """:class:`MappingError` unless the mapping suits kind record.

    No permit-only keys, no field named like one that ``id:`` / ``coordinates:`` fill,
    ``view.title`` a mapped field, a known CRS.
    """
    for key in ("scope", "conditions", "details"):
        if getattr(m, key):
            raise MappingError(f"mapping {path}: key {key!r}: only kind permit has {key}; fix: remove it or use kind: permit")
    taken = {RECORD_ID_FIELD} | ({"latitude", "longitude"} if m.coordinates else set())
    for name in m.fields:
        if name in taken:
            raise MappingError(f"mapping {path}: key 'fields.{name}': {name} is filled by id:/coordinates:; fix: rename it")
    if m.view.title is not None and m.view.title not in m.fields:
        raise MappingError(f"mapping {path}: key 'view.title': {m.view.title!r} is not under fields:; fix: name a mapped field")
    if m.coordinates is not None and (why := check_crs(m.coordinates.crs)):
        raise MappingError(f"mapping {path}: key 'coordinates.crs': {why}; fix: an EPSG code such as EPSG:3857")


def _heading(m: SourceMapping, record: Mapping[str, Any]) -> str:
    head = f"{m.view.label} {record[RECORD_ID_FIELD]}"
    if m.view.title and not is_blank(record.get(m.view.title)):
        head += f" — {one_line_text(fmt_scalar(record[m.view.title]))}"
    return head


@dataclass(frozen=True)
class KindParts:
    """What reading a mapped export takes: its file reader, its rules, its rendering."""

    reader: Callable[[Path, Path], tuple[list[RawRecord], list[Reject]]]
    rules: RecordRules
    render: Callable[[Mapping[str, Any]], Rendering | str]
    title: Callable[[Mapping[str, Any]], str | None]
    columns: dict[str, str]  # target field -> export column(s), for reject reasons
    build: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None  # one row -> one record (the reader's)


def kind_parts(m: SourceMapping, dataset: str) -> KindParts:
    """The reader, rules and rendering of the mapping's kind (``record`` for any but permit and event)."""
    if m.kind == "permit":
        build = permit_builder(m)
        return KindParts(mapped_reader(m, build), PERMIT_RULES, render_permit, permit_title,
                         field_columns(m, "permit_number"), build)
    if m.kind == "event":
        build = RowMapper(m, EVENT_TARGETS, "event_id").record
        return KindParts(mapped_reader(m, build), EVENT_RULES, render_event,
                         lambda e: one_line_text(e["title"]), field_columns(m, "event_id"), build)
    fields = record_fields(m)
    targets = {f.name: Target(f.type, multiline=(m.fields[f.name].type == "text"), rule=f.rule) for f in fields
               if f.name in m.fields}
    mapper = RowMapper(m, targets, RECORD_ID_FIELD)
    return KindParts(mapped_reader(m, mapper.record), RecordRules(RecordSchema(dataset, RECORD_ID_FIELD, fields)),
                     lambda r: render_kv_view(_heading(m, r), r, fields), partial(_heading, m),
                     field_columns(m, RECORD_ID_FIELD), mapper.record)


def load_mapped_day(m: SourceMapping, dataset: str, day_dir: Path) -> LoadResult:
    """A landing day of a mapped export: validated records as ``dataset``'s documents, and every reject."""
    parts = kind_parts(m, dataset)
    raw, rejects = read_day(day_dir, {SUFFIXES[m.format]: parts.reader})
    records, settled = settle_day(m, parts.rules, raw)
    rejects += settled
    out = build_documents(dataset, records, parts.render, parts.title)
    out.rejects[:0] = name_columns(rejects, parts.columns)
    return out


@dataclass(frozen=True)
class MappedDataset:
    """A dataset defined by a mapping file: what the registry needs to make its spec."""

    path: Path
    mapping: SourceMapping
    digest: str  # of the file: part of the dataset's source_version

    @property
    def name(self) -> str:
        """The dataset name the mapping declares."""
        return self.mapping.dataset

    @property
    def load_day(self) -> Callable[[Path], LoadResult]:
        """The registry's day loader: :func:`load_mapped_day` with this mapping."""
        return partial(load_mapped_day, self.mapping, self.mapping.dataset)

    @property
    def streams(self) -> bool:
        """Whether a day is read page by page (:mod:`~codex_pipeline.sources.mapping.stream`): a CSV export
        whose rows are each final where they stand. A mapping whose later rows update or merge into
        earlier ones (``duplicates: last`` / ``merge``) must see the whole file, so it is loaded whole."""
        return self.mapping.format == "csv" and self.mapping.duplicates.mode == "reject"

    @property
    def iter_day(self) -> Callable[[Path, list[Reject]], Iterator[SourceDocument]] | None:
        """The registry's streaming day reader when :attr:`streams`, else None (:attr:`load_day` is used)."""
        if not self.streams:
            return None
        return partial(iter_mapped_day, kind_parts(self.mapping, self.name), self.mapping, self.name)

    @property
    def description(self) -> str:
        """The registry's description: the mapping's own (or its title), the file, and the kind's chunk tree."""
        m = self.mapping
        tree = {"permit": "permit_summary → permit_scope_section and condition chunks",
                "event": "one event chunk per event (long descriptions in 800/50-token windows)"}.get(
                    m.kind, "one record_view chunk per record")
        return f"{m.description or m.title} Mapped by {self.path.name}: {tree}."


def check_mapping(m: SourceMapping, path: str) -> None:
    """The kind's own rules (target fields, required fields, coordinates), then the row features'."""
    if m.kind == "permit":
        check_permit_mapping(m, path)
    elif m.kind == "event":
        check_event_mapping(m, path)
    else:
        check_record_mapping(m, path)
    check_features(m, path)


def check_features(m: SourceMapping, path: str) -> None:
    """:class:`MappingError` for an ``optional`` field the kind requires, or a ``block`` into a field
    that cannot hold it (a record field typed other than a list or string)."""
    from codex_pipeline.sources.permits import PERMIT_SCHEMA, permit_targets

    required = {"permit": {f.name for f in PERMIT_SCHEMA.fields if f.required},
                "event": set(EVENT_REQUIRED)}.get(m.kind, set())
    for name, rule in m.fields.items():
        if rule.optional and name in required:
            raise MappingError(f"mapping {path}: key 'fields.{name}.optional': kind {m.kind} requires {name}, "
                               "so a nulled value would reject the row anyway; fix: remove optional: true")
        if rule.block is None:
            continue
        kind_type = permit_targets()[name].type if m.kind == "permit" else EVENT_TARGETS[name].type if m.kind == "event" else None
        type_ = rule.type or kind_type or "list[object]"
        if type_ not in ("list[object]", "list[string]", "string", "text"):
            raise MappingError(f"mapping {path}: key 'fields.{name}.block': a block makes a list, and {name} is {type_}; "
                               "fix: map it to a list or string field (record kind: type: \"list[object]\")")


def load_mapped_dataset(path: Path) -> MappedDataset:
    """One mapping file, parsed and checked for its kind; :class:`MappingError` names the key and the fix."""
    m = load_mapping(path)
    try:
        check_mapping(m, str(path))
    except MappingError as exc:
        raise with_line(exc, path, path.read_text(encoding="utf-8")) from None
    return MappedDataset(path, m, mapping_digest(m))


def mapping_files(folder: Path) -> list[Path]:
    """The ``*.yaml`` / ``*.yml`` mapping files of a folder, in name order."""
    if not folder.is_dir():
        raise MappingError(f"mappings folder {folder} does not exist; fix: create it or correct the configured mappings folder")
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
