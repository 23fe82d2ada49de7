"""One cell holding a point: WKT ``POINT (x y)``, ``"(lat, lon)"``, or a GeoJSON point (object or text).

A strict parser for exactly these three shapes (shapely is not a dependency, and a full
WKT / GeoJSON reader would accept lines and polygons that a point column must not hold).
The Python-literal spelling some Socrata exports write (``{'type': 'Point', 'coordinates':
[…]}``) is read as GeoJSON. Numbers must be finite; anything else is a :class:`ValueError`
saying which shapes are read.
"""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

_NUM = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_WKT = re.compile(rf"^\s*POINT\s*(?:Z\s*|M\s*|ZM\s*)?\(\s*({_NUM})\s+({_NUM})(?:\s+{_NUM}){{0,2}}\s*\)\s*$", re.I)
_WKT_EMPTY = re.compile(r"^\s*POINT\s*(?:Z\s*|M\s*|ZM\s*)?EMPTY\s*$", re.I)
_LAT_LON = re.compile(rf"^\s*\(\s*({_NUM})\s*,\s*({_NUM})\s*\)\s*$")
SHAPES = "WKT 'POINT (x y)', '(lat, lon)' or a GeoJSON point"


def parse_point(cell: Any) -> tuple[float, float] | None:
    """The point's (x, y): (longitude, latitude) for ``(lat, lon)`` and GeoJSON; None for ``POINT EMPTY``.

    :class:`ValueError` for any other value.
    """
    if isinstance(cell, dict):
        return _geojson(cell)
    text = str(cell)
    if m := _WKT.match(text):
        return _finite(m[1], m[2])
    if _WKT_EMPTY.match(text):
        return None
    if m := _LAT_LON.match(text):
        return _finite(m[2], m[1])
    if text.lstrip().startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            try:
                obj = ast.literal_eval(text.strip())
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise ValueError(f"not a point: expected {SHAPES}") from None
        if isinstance(obj, dict):
            return _geojson(obj)
    raise ValueError(f"not a point: expected {SHAPES}")


def _geojson(obj: dict[str, Any]) -> tuple[float, float]:
    coords = obj.get("coordinates")
    if obj.get("type") != "Point" or not isinstance(coords, list) or len(coords) not in (2, 3):
        raise ValueError(f"not a GeoJSON point (type {obj.get('type')!r}): expected {SHAPES}")
    if not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in coords):
        raise ValueError("GeoJSON point coordinates are not numbers")
    return _finite(coords[0], coords[1])


def _finite(x: Any, y: Any) -> tuple[float, float]:
    fx, fy = float(x), float(y)
    if not (math.isfinite(fx) and math.isfinite(fy)):
        raise ValueError("point coordinates are not finite numbers")
    return fx, fy
