"""Which coordinate reference system an export's x/y columns are in, judged by where the points fall.

Projected coordinates carry no label: the same (500000, 4900000) is a Vermont street in
UTM zone 18N and the Gulf of Guinea in web-Mercator. So each candidate system (EPSG:3857,
UTM zones of both hemispheres, and every ``NAD83 /`` system of PROJ's database: state
planes in metres and feet, NAD83 UTM, Albers) places the sampled points, and a candidate
*fits* when nearly all of them fall inside its own area of use and inside the plausible area:
``--region`` (a lon/lat box) or the box of a state/province column. Candidates
that put the points in the same place (NAD83 and WGS 84 UTM) are one *placement*; the
draft writes ``crs:`` only when exactly one placement fits.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

Region = tuple[float, float, float, float]  # lon_min, lat_min, lon_max, lat_max
INSIDE = 0.9  # share of the sampled points a fitting placement puts inside the area
SAME_PLACE_DEG = 0.05  # medians this close (about 5 km) are one placement

US_STATES = {
    "AL": "Alabama", "AK": "Alaska", "AZ": "Arizona", "AR": "Arkansas", "CA": "California", "CO": "Colorado",
    "CT": "Connecticut", "DE": "Delaware", "FL": "Florida", "GA": "Georgia", "HI": "Hawaii", "ID": "Idaho",
    "IL": "Illinois", "IN": "Indiana", "IA": "Iowa", "KS": "Kansas", "KY": "Kentucky", "LA": "Louisiana",
    "ME": "Maine", "MD": "Maryland", "MA": "Massachusetts", "MI": "Michigan", "MN": "Minnesota",
    "MS": "Mississippi", "MO": "Missouri", "MT": "Montana", "NE": "Nebraska", "NV": "Nevada",
    "NH": "New Hampshire", "NJ": "New Jersey", "NM": "New Mexico", "NY": "New York", "NC": "North Carolina",
    "ND": "North Dakota", "OH": "Ohio", "OK": "Oklahoma", "OR": "Oregon", "PA": "Pennsylvania",
    "RI": "Rhode Island", "SC": "South Carolina", "SD": "South Dakota", "TN": "Tennessee", "TX": "Texas",
    "UT": "Utah", "VT": "Vermont", "VA": "Virginia", "WA": "Washington", "WV": "West Virginia",
    "WI": "Wisconsin", "WY": "Wyoming", "DC": "District of Columbia",
}
CA_PROVINCES = {
    "AB": "Alberta", "BC": "British Columbia", "MB": "Manitoba", "NB": "New Brunswick",
    "NL": "Newfoundland", "NS": "Nova Scotia", "ON": "Ontario", "PE": "Prince Edward Island",
    "QC": "Quebec", "SK": "Saskatchewan", "YT": "Yukon", "NT": "Northwest Territories", "NU": "Nunavut",
}


def parse_region(text: str) -> Region:
    """``"lon_min,lat_min,lon_max,lat_max"`` as a box; ValueError (with the fix) when it is not one."""
    try:
        a, b, c, d = (float(p) for p in text.split(","))
    except ValueError:
        raise ValueError(f"--region {text!r}: give four numbers lon_min,lat_min,lon_max,lat_max "
                         "(e.g. -73.3,44.4,-73.1,44.6)") from None
    if not (-180 <= a < c <= 180 and -90 <= b < d <= 90):
        raise ValueError(f"--region {text!r}: lon_min < lon_max within -180..180 and lat_min < lat_max within "
                         "-90..90 (longitude first)")
    return (a, b, c, d)


@dataclass(frozen=True)
class Candidate:
    """A projected system: its code and area of use (lon/lat box)."""

    code: str
    name: str
    area: Region


@lru_cache(maxsize=1)
def candidates() -> tuple[Candidate, ...]:
    """EPSG:3857, the 120 WGS 84 UTM zones, then every ``NAD83 /`` projected system of PROJ's database."""
    from pyproj.database import query_crs_info
    from pyproj.enums import PJType

    out = [Candidate("EPSG:3857", "WGS 84 / Pseudo-Mercator", (-180.0, -85.06, 180.0, 85.06))]
    for south, base in ((False, 32600), (True, 32700)):
        for z in range(1, 61):
            west = -180.0 + 6 * (z - 1)
            out.append(Candidate(f"EPSG:{base + z}", f"WGS 84 / UTM zone {z}{'S' if south else 'N'}",
                                 (west, -80.0 if south else 0.0, west + 6, 0.0 if south else 84.0)))
    for info in query_crs_info(auth_name="EPSG", pj_types=PJType.PROJECTED_CRS):
        if info.name.startswith("NAD83 /") and info.area_of_use is not None and not info.deprecated:
            out.append(Candidate(f"EPSG:{info.code}", info.name, tuple(info.area_of_use.bounds)))  # type: ignore[arg-type]
    return tuple(out)


@lru_cache(maxsize=512)
def _proj(code: str) -> Any:
    """The projection alone (no datum shift): 1 ms to build where a full transformer takes 6 to 14 ms,
    and NAD83 and WGS 84 differ by a metre or two, far below what tells placements apart."""
    import warnings

    from pyproj import Proj

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "loses information when converting to PROJ string": the datum, on purpose
        return Proj(code)


def region_of(value: str) -> Region | None:
    """The lon/lat box of a US state or Canadian province (code or name), from PROJ's areas of use."""
    v = value.strip()
    name = US_STATES.get(v.upper()) or CA_PROVINCES.get(v.upper()) or v.title()
    if name not in US_STATES.values() and name not in CA_PROVINCES.values():
        return None
    country = "United States (USA)" if name in US_STATES.values() else "Canada"
    rx = re.compile(rf"^{re.escape(country)} - {re.escape(name)}\b")
    boxes = [c.area for c in candidates()[121:] if rx.search(_area_name(c.code))]
    if not boxes:
        return None
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


@lru_cache(maxsize=1)
def _area_names() -> dict[str, str]:
    from pyproj.database import query_crs_info
    from pyproj.enums import PJType

    return {f"EPSG:{i.code}": i.area_of_use.name or "" for i in query_crs_info(auth_name="EPSG", pj_types=PJType.PROJECTED_CRS)
            if i.area_of_use is not None and i.name.startswith("NAD83 /")}


def _area_name(code: str) -> str:
    return _area_names().get(code, "")


def _inside(lon: float, lat: float, box: Region, pad: float = 0.0) -> bool:
    return box[0] - pad <= lon <= box[2] + pad and box[1] - pad <= lat <= box[3] + pad


def _overlaps(a: Region, b: Region) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


@dataclass(frozen=True)
class Placement:
    """Where one candidate system puts the points: its code, name and the points' median lon/lat."""

    code: str
    name: str
    lon: float
    lat: float


@dataclass(frozen=True)
class CrsGuess:
    """``crs`` when exactly one placement fits, else None; ``fits``: one placement per place, best first."""

    crs: str | None
    fits: tuple[Placement, ...]
    why: str  # one line for the draft's comment


def _sample(points: list[tuple[float, float]], n: int = 200) -> list[tuple[float, float]]:
    step = max(len(points) // n, 1)
    return points[::step][:n]


def guess_crs(points: list[tuple[float, float]], region: Region | None = None, region_name: str = "the --region box"
              ) -> CrsGuess:
    """The system the (x, y) ``points`` are in, judged by the area they fall in (module docstring)."""
    pts = _sample([(x, y) for x, y in points if (x, y) != (0.0, 0.0)])
    if not pts:
        return CrsGuess(None, (), "no non-zero points in the sample")
    where = region_name if region else "the system's own area of use"
    if all(abs(x) <= 180 and abs(y) <= 90 for x, y in pts):
        lon, lat = statistics.median(x for x, _ in pts), statistics.median(y for _, y in pts)
        place = Placement("EPSG:4326", "WGS 84 longitude/latitude", lon, lat)
        inside = region is None or sum(_inside(x, y, region) for x, y in pts) >= INSIDE * len(pts)
        if inside:
            return CrsGuess("EPSG:4326", (place,), f"longitude/latitude in degrees (median {lat:.4f}, {lon:.4f})")
        return CrsGuess(None, (), f"degrees, but the points are not inside {where}: check x/y and --region")
    fits: list[Placement] = []
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    for cand in candidates():
        if region is not None and not _overlaps(cand.area, region):
            continue
        lons, lats = _proj(cand.code)(xs, ys, inverse=True, errcheck=False)
        pad = 3.0 if "UTM" in cand.name else 0.5  # UTM is often used a zone's width beyond its own
        ok = sum(_inside(lo, la, cand.area, pad) and (region is None or _inside(lo, la, region))
                 for lo, la in zip(lons, lats) if lo == lo and la == la and abs(lo) != float("inf"))
        if ok < INSIDE * len(pts):
            continue
        place = Placement(cand.code, cand.name, statistics.median(lons), statistics.median(lats))
        if not any(abs(p.lon - place.lon) < SAME_PLACE_DEG and abs(p.lat - place.lat) < SAME_PLACE_DEG for p in fits):
            fits.append(place)
    if len(fits) == 1:
        f = fits[0]
        return CrsGuess(f.code, tuple(fits), f"{f.name}: the only system placing the points inside {where} "
                                             f"(median {f.lat:.4f}, {f.lon:.4f})")
    if not fits:
        return CrsGuess(None, (), f"no candidate system places the points inside {where}: set crs: by hand")
    shown = "; ".join(f"{p.code} {p.name} → {p.lat:.3f}, {p.lon:.3f}" for p in fits[:4])
    return CrsGuess(None, tuple(fits), f"{len(fits)} systems place the points in different places inside {where} "
                                       f"({shown}{' …' if len(fits) > 4 else ''}); give --region "
                                       "lon_min,lat_min,lon_max,lat_max or set crs:")
