"""Values that convert but cannot be right: ``codex sources check``'s warnings (they reject nothing).

A wrong ``crs:`` lands every point in the wrong place, a UTF-8 file read as Latin-1 lands
``CafÃ©``, a typo lands a permit in 2202: each row passes its rules. What gives them
away is the file itself: points far from where the other rows are (or outside ``--region``),
points at 0,0, dates far outside the range of the others, mojibake.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

Region = tuple[float, float, float, float]
FAR_KM = 100.0  # a point this far from the rows' median is not where the others are
DATE_SPAN_FACTOR = 5  # dates beyond the central 90% by this many times its span (at least a year)
_MOJIBAKE = re.compile(r"[ÃÂ][\u0080-\u00bf]|â€[\u0080-\u00bf™œ\u009d\"“”˜]|Ã[©¨ ¡¢£¤§«­®¯±²³´µ¶·¸¹º»¼½¾¿]")


def _km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    return 6371.0 * 2 * math.asin(min(1.0, math.sqrt(a)))


def _first(refs: Sequence[str], n: int = 3) -> str:
    return ", ".join(refs[:n]) + (" …" if len(refs) > n else "")


def point_warnings(records: Sequence[tuple[str, Mapping[str, Any]]], region: Region | None) -> list[str]:
    """Points at 0,0, outside ``region``, or over :data:`FAR_KM` from the median of the rows' points."""
    pts = [(ref, float(r["latitude"]), float(r["longitude"])) for ref, r in records
           if isinstance(r.get("latitude"), (int, float)) and isinstance(r.get("longitude"), (int, float))]
    if not pts:
        return []
    out = []
    zero = [ref for ref, la, lo in pts if la == 0 and lo == 0]
    if zero:
        out.append(f"{len(zero)} point(s) at 0,0 (a missing location written as zeros?): {_first(zero)}; "
                   "fix: add \"0\" to empty_values, or correct the rows")
    real = [(ref, la, lo) for ref, la, lo in pts if (la, lo) != (0, 0)]
    if not real:
        return out
    if region is not None:
        outside = [ref for ref, la, lo in real if not (region[0] <= lo <= region[2] and region[1] <= la <= region[3])]
        if outside:
            out.append(f"{len(outside)} of {len(real)} point(s) outside the region {region}: {_first(outside)}; "
                       "fix: check coordinates.crs (and x/y order), or the region")
    mlat, mlon = statistics.median(p[1] for p in real), statistics.median(p[2] for p in real)
    far = [ref for ref, la, lo in real if _km(la, lo, mlat, mlon) > FAR_KM]
    if far:
        out.append(f"{len(far)} of {len(real)} point(s) over {FAR_KM:.0f} km from the rows' median point "
                   f"({mlat:.4f}, {mlon:.4f}): {_first(far)}; fix: check those rows' coordinates")
    return out


def _as_date(v: Any) -> dt.date | None:
    if not isinstance(v, str) or len(v) < 10:
        return None
    try:
        return dt.date.fromisoformat(v[:10])
    except ValueError:
        return None


def date_warnings(records: Sequence[tuple[str, Mapping[str, Any]]], fields: Sequence[str]) -> list[str]:
    """Per date field: values far outside the range of the file's other dates (module docstring)."""
    out = []
    for name in fields:
        dated = [(ref, d) for ref, r in records if (d := _as_date(r.get(name))) is not None]
        if len(dated) < 5:
            continue
        days = sorted(d.toordinal() for _, d in dated)
        lo, hi = days[len(days) // 20], days[-1 - len(days) // 20]
        span = max(hi - lo, 365) * DATE_SPAN_FACTOR
        odd = [f"{ref} ({d.isoformat()})" for ref, d in dated if d.toordinal() < lo - span or d.toordinal() > hi + span]
        if odd:
            out.append(f"field {name!r}: {len(odd)} date(s) far outside the file's range "
                       f"({dt.date.fromordinal(lo)} … {dt.date.fromordinal(hi)}): {_first(odd)}; fix: check those rows")
    return out


def mojibake_warnings(records: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """UTF-8 read as Latin-1 / cp1252 (``CafÃ©``, ``â€™``): the file's encoding is set wrong."""
    bad = [(ref, v) for ref, r in records for v in r.values() if isinstance(v, str) and _MOJIBAKE.search(v)]
    if not bad:
        return []
    ref, v = bad[0]
    m = _MOJIBAKE.search(v)
    at = m.start() if m else 0
    return [f"{len(bad)} value(s) look like UTF-8 read in another encoding (e.g. {ref}: "
            f"{v[max(at - 10, 0):at + 12]!r}); fix: set encoding: utf-8 (remove encoding: from the mapping)"]


def crs_warnings(records: Sequence[tuple[str, Mapping[str, Any]]], crs: str, region: Region | None) -> list[str]:
    """The mapping's projected ``crs`` judged as ``init`` judges one: the points are taken back to x/y,
    and when other systems place them plausibly elsewhere, say so. Without ``region`` only EPSG:3857 is
    judged (a UTM zone or a state plane chosen by hand has its own small area; web-Mercator has the world).

    This is what catches UTM x/y labelled web-Mercator: every point lands, all together, in the sea.
    """
    from codex_pipeline.sources.mapping.crs_guess import guess_crs

    if crs.upper() in ("EPSG:4326", "WGS84") or (region is None and crs.upper() != "EPSG:3857"):
        return []  # without a region only web-Mercator is suspect: it places any x/y somewhere on Earth
    pts = [(float(r["longitude"]), float(r["latitude"])) for _, r in records
           if isinstance(r.get("latitude"), (int, float)) and isinstance(r.get("longitude"), (int, float))]
    pts = [p for p in pts if p != (0.0, 0.0)][:: max(len(pts) // 200, 1)]
    if not pts:
        return []
    from pyproj import Transformer

    xs, ys = Transformer.from_crs("EPSG:4326", crs, always_xy=True).transform([p[0] for p in pts], [p[1] for p in pts])
    g = guess_crs(list(zip(xs, ys)), region)
    mlat, mlon = statistics.median(p[1] for p in pts), statistics.median(p[0] for p in pts)
    others = [p for p in g.fits if abs(p.lat - mlat) >= 0.05 or abs(p.lon - mlon) >= 0.05]  # elsewhere than crs puts them
    if not others:
        return []
    shown = "; ".join(f"{p.code} {p.name} → {p.lat:.3f}, {p.lon:.3f}" for p in others[:3])
    return [f"coordinates.crs {crs} puts the points at {mlat:.3f}, {mlon:.3f}; {len(others)} other system(s) place "
            f"the same x/y plausibly elsewhere ({shown}{' …' if len(others) > 3 else ''}); fix: check crs:, "
            "or run check with --region=lon_min,lat_min,lon_max,lat_max to test it"]


def plausibility_warnings(records: Sequence[tuple[str, Mapping[str, Any]]], date_fields: Sequence[str],
                          region: Region | None = None, crs: str | None = None) -> list[str]:
    """Every warning about the landed ``(ref, record)`` pairs: points (and the ``crs`` they came through), dates, mojibake."""
    return (point_warnings(records, region) + (crs_warnings(records, crs, region) if crs else [])
            + date_warnings(records, date_fields) + mojibake_warnings(records))
