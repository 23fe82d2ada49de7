"""``ais_positions``: AIS vessel position reports, exported raw and never chunked.

A position is a point-in-time record (one row = one record): there is no structure
inside it to cut along and nothing for a retriever to gain from a chunk of it, so the
dataset has a ``raw`` table only (registry entry with ``chunker=None``). Positions are
still validated like every other record and keep a canonical text (the key-value
view), so the raw export is self-describing.

Landing format: CSV in the MarineCadastre / NOAA AIS layout (``MMSI,BaseDateTime,LAT,
LON,SOG,COG,Heading,VesselName,IMO,CallSign,VesselType,Status,Length,Width,Draft,Cargo,
TransceiverClass``), or JSON Lines with the snake_case field names below.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import LoadResult
from codex_pipeline.sources.records import Field, RecordSchema
from codex_pipeline.sources.structured import (
    LATITUDE_RULE,
    LONGITUDE_RULE,
    NON_NEGATIVE,
    RecordRules,
    StructuredDataset,
    one_line,
    one_of,
)

DATASET = "ais_positions"

MARINECADASTRE_COLUMNS: dict[str, str] = {
    "MMSI": "mmsi",
    "BaseDateTime": "base_datetime",
    "LAT": "lat",
    "LON": "lon",
    "SOG": "sog",
    "COG": "cog",
    "Heading": "heading",
    "VesselName": "vessel_name",
    "IMO": "imo",
    "CallSign": "call_sign",
    "VesselType": "vessel_type",
    "Status": "status",
    "Length": "length",
    "Width": "width",
    "Draft": "draft",
    "Cargo": "cargo",
    "TransceiverClass": "transceiver_class",
}

AIS_SCHEMA = RecordSchema(
    DATASET,
    "mmsi",
    (
        Field("mmsi", "integer", True, "Maritime Mobile Service Identity (9 digits). CSV `MMSI`.", ("9 digits", lambda v: 100_000_000 <= v <= 999_999_999)),
        Field("base_datetime", "datetime", True, "Time of the report, ISO 8601; UTC when no offset is given. CSV `BaseDateTime`."),
        Field("lat", "number", True, "Latitude (WGS 84). CSV `LAT`.", LATITUDE_RULE),
        Field("lon", "number", True, "Longitude (WGS 84). CSV `LON`.", LONGITUDE_RULE),
        Field("sog", "number", False, "Speed over ground, knots (102.3 = not available). CSV `SOG`.", ("between 0 and 102.3", lambda v: 0 <= v <= 102.3)),
        Field("cog", "number", False, "Course over ground, degrees (360 = not available). CSV `COG`.", ("between 0 and 360", lambda v: 0 <= v <= 360)),
        Field("heading", "integer", False, "True heading, degrees (511 = not available). CSV `Heading`.", ("0–359 or 511", lambda v: 0 <= v <= 359 or v == 511)),
        Field("vessel_name", "string", False, "Vessel name as broadcast. CSV `VesselName`.", one_line(60)),
        Field("imo", "string", False, "IMO number, `IMO` + 7 digits. CSV `IMO`.", ("IMO + 7 digits", lambda v: bool(re.match(r"^IMO\d{7}$", v)))),
        Field("call_sign", "string", False, "Radio call sign. CSV `CallSign`.", one_line(20)),
        Field("vessel_type", "integer", False, "AIS ship-and-cargo type code. CSV `VesselType`.", ("between 0 and 1025", lambda v: 0 <= v <= 1025)),
        Field("status", "integer", False, "Navigational status code 0–15 (0 under way using engine, 1 at anchor, 5 moored, 15 undefined). CSV `Status`.", ("between 0 and 15", lambda v: 0 <= v <= 15)),
        Field("length", "number", False, "Length overall, metres. CSV `Length`.", NON_NEGATIVE),
        Field("width", "number", False, "Beam, metres. CSV `Width`.", NON_NEGATIVE),
        Field("draft", "number", False, "Draught, metres. CSV `Draft`.", NON_NEGATIVE),
        Field("cargo", "integer", False, "Cargo / hazard code. CSV `Cargo`.", NON_NEGATIVE),
        Field("transceiver_class", "string", False, "AIS transceiver class. CSV `TransceiverClass`.", one_of("A", "B")),
    ),
)


def position_id(record: Mapping[str, Any]) -> str:
    """``{mmsi}-{YYYYMMDDTHHMMSSZ}``: a vessel reports at most one position per second."""
    t = dt.datetime.fromisoformat(record["base_datetime"])
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    return f"{record['mmsi']}-{t:%Y%m%dT%H%M%S}Z"


AIS_POSITIONS = StructuredDataset(
    name=DATASET,
    label="AIS position",
    title_field="vessel_name",
    rules=RecordRules(AIS_SCHEMA),
    csv_columns=MARINECADASTRE_COLUMNS,
    record_id=position_id,
)


def load_ais_day(day_dir: Path) -> LoadResult:
    """Validated positions of one landing day; de-duplicated on (MMSI, second)."""
    return AIS_POSITIONS.load_day(day_dir)
