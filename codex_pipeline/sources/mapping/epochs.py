"""One date / date-time cell read by one ``formats:`` entry: strptime, ``iso``, or epoch seconds / milliseconds.

Epoch values are instants: they are read in UTC and, when the field names a ``timezone``,
shown in that zone (so an ``epoch_ms`` date is the day it was in that zone).
"""

from __future__ import annotations

import datetime as dt
import re

EPOCH_FORMATS = {"epoch_s": 1, "epoch_ms": 1000}
_EPOCH = re.compile(r"^[+-]?\d{1,16}(?:\.\d+)?$")


def parse_when(s: str, fmt: str, timezone: str | None = None) -> dt.datetime:
    """``s`` read by ``fmt``; :class:`ValueError` when it does not fit."""
    if fmt == "iso":
        return dt.datetime.fromisoformat(s)
    scale = EPOCH_FORMATS.get(fmt)
    if scale is None:
        return dt.datetime.strptime(s, fmt)
    if not _EPOCH.match(s):
        raise ValueError(f"{s!r} is not a number of {'milli' if scale > 1 else ''}seconds")
    try:
        when = dt.datetime.fromtimestamp(float(s) / scale, dt.UTC)
    except (OverflowError, OSError) as exc:
        raise ValueError(str(exc)) from None
    if timezone:
        from zoneinfo import ZoneInfo

        when = when.astimezone(ZoneInfo(timezone))
    return when
