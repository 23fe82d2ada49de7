"""A column's type from the profile of its sampled values: dates (with their formats), money, booleans, ids.

Each guess is one the mapping's reader then applies to every row, so a guess must read
*every* sampled value: a date column gets the few strptime formats that together read
all of them, a money column the characters to strip, and a column of digits with a
leading zero stays a string (a code, not a quantity).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from itertools import product

_DAYS = ("%Y-%m-%d", "%Y/%m/%d", "%m/%d/%Y", "%d/%m/%Y", "%m-%d-%Y", "%d-%m-%Y", "%d.%m.%Y", "%d-%b-%Y",
         "%d-%b-%y", "%d %b %Y", "%d %B %Y", "%b %d, %Y", "%B %d, %Y", "%b %d %Y", "%m/%d/%y", "%Y%m%d")
_TIMES = ("", " %H:%M:%S", " %H:%M", "T%H:%M:%S", "T%H:%M", "T%H:%M:%S.%f", "T%H:%M:%SZ", "T%H:%M:%S.%fZ",
          "T%H:%M:%S%z", "T%H:%M:%S.%f%z", " %H:%M:%S%z", " %H:%M:%S.%f", " %I:%M:%S %p", " %I:%M %p",
          " %H:%M:%S+00", " %H:%M:%S.%f+00")
DATE_FORMATS: tuple[str, ...] = tuple(d + t for d, t in product(_DAYS, _TIMES) if not (d == "%Y%m%d" and t))
"""Every date format tried, in order of preference (month first before day first: the North American default)."""
_INT = re.compile(r"^[+-]?\d+$")
_NUM = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_MONEY = re.compile(r"^[+-]?[$€£]?[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?$")
_DATEISH = re.compile(r"\d{1,4}[-/. ]\w{1,9}[-/., ]+\d{2,4}|^\d{8}$|^[A-Za-z]{3,9} \d{1,2},? \d{4}")
NULL_TOKENS = frozenset({"n/a", "na", "null", "none", "nil", "-", "--", "nan", "#n/a", "0000-00-00",
                         "0000-00-00 00:00:00", "00/00/0000", "(null)", "not available"})
"""Cells (any case) that exports write for "no value": left out of profiles, written under ``empty_values``."""
_BOOLS = ({"true", "false"}, {"yes", "no"}, {"y", "n"}, {"t", "f"})
MAX_FORMATS = 3


@dataclass(frozen=True)
class ColumnGuess:
    """What the sample says of one column; ``unique``: every sampled row has a value, all different."""

    column: str
    filled: int  # non-empty values in the sample
    type: str  # string | text | integer | number | boolean | date
    date_format: str | None  # the first of ``formats`` (dates)
    unique: bool
    distinct: int = 0  # distinct non-empty values in the sample
    longest: int = 0  # characters of the longest sampled value
    formats: tuple[str, ...] = ()  # dates: the strptime formats that together read every sampled value
    strip: str = ""  # money: characters removed before the number converts
    note: str = ""  # what the guess is unsure of, for the draft's comment


def _reads(fmt: str, v: str) -> bool:
    try:
        dt.datetime.strptime(v, fmt)
    except ValueError:
        return False
    return True


def date_formats(values: list[str]) -> tuple[str, ...]:
    """The fewest formats of :data:`DATE_FORMATS` (at most :data:`MAX_FORMATS`) that read every value; () if none."""
    distinct = list(dict.fromkeys(values))
    if not distinct or not all(_DATEISH.search(v) for v in distinct[:50]):
        return ()
    left, chosen = distinct, list[str]()
    while left and len(chosen) < MAX_FORMATS:
        probe = left[:3]
        cands = [f for f in DATE_FORMATS if any(_reads(f, v) for v in probe)]
        if not cands:
            return ()
        best = max(cands, key=lambda f: (sum(_reads(f, v) for v in left), -DATE_FORMATS.index(f)))
        rest = [v for v in left if not _reads(best, v)]
        if len(rest) == len(left):
            return ()
        chosen.append(best)
        left = rest
    return tuple(chosen) if not left else ()


def _money(present: list[str]) -> str:
    """The characters to strip when every value reads as money (``$20,000.00``) and some carry ``$`` or ``,``."""
    if not all(_MONEY.match(v) for v in present):
        return ""
    found = {c for v in present for c in v if c in "$€£,"}
    return "".join(sorted(found))


_DATE_NAME = re.compile(r"(date|time|_at$|_on$|^at$|^on$|issued|applied|created|updated|modified|timestamp|_dt$|^dt)", re.I)


def _epoch(present: list[str]) -> tuple[str, str]:
    """``(format, unit)`` when every integer reads as a Unix time (1990 to 2040): ``epoch_ms`` or ``epoch_s``."""
    for fmt, unit, scale in (("epoch_ms", "milliseconds", 1000), ("epoch_s", "seconds", 1)):
        lo, hi = 631152000 * scale, 2208988800 * scale
        if all(lo <= int(v) < hi for v in present):
            return fmt, unit
    return "", ""


def guess_column(column: str, values: list[str]) -> ColumnGuess:
    """The type every non-empty sampled value reads as (``string`` when there is none), and counts.

    ``date`` when a few of :data:`DATE_FORMATS` read them all (unless all are integers);
    ``string`` when a value has a leading zero (a code); ``boolean`` for yes/no, true/false,
    y/n, t/f; ``integer``, ``number``; ``number`` with ``strip`` for money (``$20,000.00``);
    else ``text`` when values are long (over 120 characters on average) or multi-line,
    ``string`` otherwise.
    """
    present = [v.strip() for v in values if v.strip() and v.strip().lower() not in NULL_TOKENS]
    if not present:
        return ColumnGuess(column, 0, "string", None, False)
    unique = len(present) == len(values) and len(set(present)) == len(present)
    base = dict(filled=len(present), unique=unique, distinct=len(set(present)), longest=max(map(len, present)))
    all_int = all(_INT.match(v) for v in present)
    fmts = () if all_int and not all(len(v) == 8 and v[:2] in ("19", "20") for v in present) else date_formats(present)
    if fmts:
        note = ""
        if any("%m/%d" in f or "%m-%d" in f for f in fmts) and all(
                _reads(f.replace("%m/%d", "%d/%m").replace("%m-%d", "%d-%m"), v) for f in fmts for v in present[:200]
                if _reads(f, v)):
            note = "day and month both 12 or less in every sampled value: check month-first"
        return ColumnGuess(column, type="date", date_format=fmts[0], formats=fmts, note=note, **base)  # type: ignore[arg-type]
    low = {v.lower() for v in present}
    if (len(low) == 2 and any(low <= b for b in _BOOLS)) or (len(low) == 1 and any(low <= b for b in _BOOLS[:2])):
        return ColumnGuess(column, type="boolean", date_format=None, **base)  # type: ignore[arg-type]
    if any(len(v) > 1 and v.lstrip("+-").startswith("0") and v.lstrip("+-")[1:2] not in (".", "") for v in present):
        return ColumnGuess(column, type="string", date_format=None, **base)  # type: ignore[arg-type]  # a code
    if all_int:
        fmt, unit = _epoch(present)
        scale = 1000 if fmt == "epoch_ms" else 1
        first = dt.datetime.fromtimestamp(int(present[0]) / scale, dt.UTC) if fmt else None
        if fmt and _DATE_NAME.search(column):  # a date by its name and its values: read as one
            return ColumnGuess(column, type="datetime", date_format=fmt, formats=(fmt,),
                               note=f"Unix epoch {unit} ({present[0]} = {first:%Y-%m-%d %H:%M} UTC)",
                               **base)  # type: ignore[arg-type]
        note = f"integers that read as Unix epoch {unit} ({present[0]} = {first:%Y-%m-%d}): a date column? " \
               f"kept as integer (formats: [{fmt}] reads them)" if first else ""
        return ColumnGuess(column, type="integer", date_format=None, note=note, **base)  # type: ignore[arg-type]
    if all(_NUM.match(v) for v in present):
        return ColumnGuess(column, type="number", date_format=None, **base)  # type: ignore[arg-type]
    if strip := _money(present):
        return ColumnGuess(column, type="number", date_format=None, strip=strip, **base)  # type: ignore[arg-type]
    long = sum(len(v) for v in present) / len(present) > 120 or any("\n" in v for v in present)
    return ColumnGuess(column, type="text" if long else "string", date_format=None, **base)  # type: ignore[arg-type]
