"""The typed fields a dataset's records carry: what becomes ``codex.<dataset>_records``' columns.

The raw step writes them into each ``raw`` partition's footer, where the catalog reads
them without importing the mapping (:mod:`codex_pipeline.warehouse.records_view`).
"""

from __future__ import annotations

from codex_pipeline.sources.events import EVENT_SCHEMA
from codex_pipeline.sources.mapping.kinds import record_fields
from codex_pipeline.sources.mapping.schema import SourceMapping
from codex_pipeline.sources.permits import PERMIT_SCHEMA
from codex_pipeline.sources.records import RecordSchema

Columns = tuple[tuple[str, str], ...]
"""``((field, value type), …)``: value types as in a mapping (``string``, ``date``, ``list[string]`` …)."""
COORDINATES = ("latitude", "longitude")


def schema_columns(schema: RecordSchema) -> Columns:
    """Every field of a built-in schema but its id (the view's ``record_id``), in schema order."""
    return tuple((f.name, f.type) for f in schema.fields if f.name != schema.id_field)


def mapping_columns(m: SourceMapping) -> Columns:
    """The mapped fields in mapping order with their types (a permit or event field: its schema's), then
    ``latitude`` / ``longitude`` when the mapping has ``coordinates``."""
    if m.kind == "record":
        return tuple((f.name, f.type) for f in record_fields(m)[1:])  # a block: list[object], a JSON column
    schema = PERMIT_SCHEMA if m.kind == "permit" else EVENT_SCHEMA
    types = {f.name: f.type for f in schema.fields}
    names = [*m.fields, *(COORDINATES if m.coordinates is not None else ())]
    return tuple((n, types[n]) for n in dict.fromkeys(names) if n in types)
