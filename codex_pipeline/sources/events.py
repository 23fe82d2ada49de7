"""``events_timeline``: one JSON Lines record per event (detections, incidents, notices).

Canonical text of an event: a header (one ``Label: value`` line per present field, in
a fixed order), a blank line, then the description's paragraphs. The two are the
document's blocks (``header``, ``description``), so the ``event`` chunker cuts exactly
there (the description may be split into 800-token windows) without rendering again.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import LoadResult
from codex_pipeline.sources.records import Field, RecordSchema, read_json_lines
from codex_pipeline.sources.structured import (
    LATITUDE_RULE,
    LONGITUDE_RULE,
    RECORD_ID_RE,
    RECORD_ID_RULE,
    TZ_RULE,
    RecordRules,
    Rendering,
    build_documents,
    clean_text,
    fmt_scalar,
    is_blank,
    join_blocks,
    load_records,
    one_line,
    one_line_text,
    one_of,
)

DATASET = "events_timeline"
SEVERITIES = ("info", "low", "medium", "high", "critical")

EVENT_SCHEMA = RecordSchema(
    DATASET,
    "event_id",
    (
        Field("event_id", "string", True, "Stable id of the event; also the chunk's `section_id`.", RECORD_ID_RULE),
        Field("event_type", "string", True, "snake_case type, e.g. `dark_event`, `port_call`, `road_closure`.", ("snake_case", lambda v: bool(re.match(r"^[a-z][a-z0-9_]{0,63}$", v)))),
        Field("title", "string", True, "One-line headline.", one_line(300)),
        Field("occurred_at", "datetime", True, "Start of the event, ISO 8601 with offset.", TZ_RULE),
        Field("ended_at", "datetime", False, "End of the event (not before `occurred_at`).", TZ_RULE),
        Field("severity", "string", False, "One of " + ", ".join(SEVERITIES) + ".", one_of(*SEVERITIES)),
        Field("confidence", "number", False, "Detector / analyst confidence, 0–1.", ("between 0 and 1", lambda v: 0 <= v <= 1)),
        Field("location_name", "string", False, "Place name.", one_line(300)),
        Field("latitude", "number", False, "Latitude (WGS 84); given together with longitude.", LATITUDE_RULE),
        Field("longitude", "number", False, "Longitude (WGS 84); given together with latitude.", LONGITUDE_RULE),
        Field("source", "string", True, "System or agency that reported the event.", one_line(200)),
        Field("source_ref", "string", False, "Upstream reference (URL, case or alert number).", one_line(500)),
        Field("entities", "list[string]", False, "Entities involved, `kind:identifier (label)`, e.g. `vessel:MMSI 257123450 (NORDIC CRANE)`.", ("at most 100 items of one line each", lambda v: len(v) <= 100 and all("\n" not in x and len(x) <= 300 for x in v))),
        Field("tags", "list[string]", False, "Free tags.", ("at most 50 items of one line each", lambda v: len(v) <= 50 and all("\n" not in x and len(x) <= 100 for x in v))),
        Field("related_event_ids", "list[string]", False, "Ids of related events.", ("event ids", lambda v: len(v) <= 100 and all(RECORD_ID_RE.match(x) for x in v))),
        Field("description", "string", False, "Narrative description; may be long (split into 800-token windows)."),
    ),
)


def _before_end(d: Mapping[str, Any]) -> bool:
    if is_blank(d.get("ended_at")):
        return True
    return dt.datetime.fromisoformat(d["ended_at"]) >= dt.datetime.fromisoformat(d["occurred_at"])


EVENT_RULES = RecordRules(
    EVENT_SCHEMA,
    checks=(
        ("ended_at is not before occurred_at", _before_end),
        ("latitude and longitude are given together", lambda d: is_blank(d.get("latitude")) == is_blank(d.get("longitude"))),
    ),
)


def _duration(start: str, end: str) -> str:
    minutes = int((dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)).total_seconds() // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    parts = [f"{days} d"] if days else []
    parts += [f"{hours} h"] if hours else []
    parts += [f"{mins} min"] if mins or not parts else []
    return " ".join(parts)


def render_event(e: Mapping[str, Any]) -> Rendering:
    """Header lines in a fixed order, then the description (``header`` / ``description`` parts)."""
    lines = [f"Event {e['event_id']}: {one_line_text(e['title'])}", f"Type: {e['event_type']}"]
    when = f"Occurred: {e['occurred_at']}"
    if not is_blank(e.get("ended_at")):
        when += f" to {e['ended_at']} ({_duration(e['occurred_at'], e['ended_at'])})"
    lines.append(when)
    if not is_blank(e.get("severity")):
        lines.append(f"Severity: {e['severity']}")
    if not is_blank(e.get("confidence")):
        lines.append(f"Confidence: {fmt_scalar(e['confidence'])}")
    place = one_line_text(e["location_name"]) if not is_blank(e.get("location_name")) else ""
    if not is_blank(e.get("latitude")):
        coords = f"{fmt_scalar(e['latitude'])}, {fmt_scalar(e['longitude'])}"
        place = f"{place} ({coords})" if place else coords
    if place:
        lines.append(f"Location: {place}")
    source = one_line_text(e["source"])
    if not is_blank(e.get("source_ref")):
        source += f" ({one_line_text(e['source_ref'])})"
    lines.append(f"Source: {source}")
    for key, label in (("entities", "Entities"), ("tags", "Tags"), ("related_event_ids", "Related events")):
        if not is_blank(e.get(key)):
            lines.append(f"{label}: " + "; ".join(one_line_text(x) for x in e[key]))
    blocks: list[tuple[str, str, str, dict[str, Any]]] = [("header", "", "\n".join(lines), {})]
    description = clean_text(e["description"]) if not is_blank(e.get("description")) else ""
    if description:
        blocks.append(("description", "", description, {}))
    return join_blocks(blocks)


def load_events_day(day_dir: Path) -> LoadResult:
    """Validated events of one landing day (``*.jsonl``), one document per event."""
    records, rejects = load_records(day_dir, EVENT_RULES, {".jsonl": read_json_lines})
    out = build_documents(DATASET, records, render_event, lambda e: one_line_text(e["title"]))
    out.rejects[:0] = rejects
    return out
