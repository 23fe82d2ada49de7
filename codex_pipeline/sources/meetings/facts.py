"""What a meeting record says about itself: which record it is, the body that met, and the date.

A city's agenda, minutes and transcript of one meeting rarely share a file name, so the meeting
is identified by what they share: the body (``Huntsville City Council``) and the date. Dates
come from the file name first (clerks' systems name files by date: ``2026-06-11-…``,
``20191210-…``, ``12-3-2019_…``), then from the record's opening text (``June 11, 2026``).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

_MONTHS = {m: i for i, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"), 1)}
_ISO_NAME = re.compile(r"(?<!\d)(20\d\d|19\d\d)[-_]?([01]\d)[-_]?([0-3]\d)(?!\d)")
_US_NAME = re.compile(r"(?<!\d)([01]?\d)[-_.]([0-3]?\d)[-_.]((?:19|20)?\d\d)(?!\d)")
_WRITTEN = re.compile(r"\b(" + "|".join(_MONTHS) + r")\.?\s+([0-3]?\d)(?:st|nd|rd|th)?,?\s+((?:19|20)\d\d)\b", re.I)
HEAD_CHARS = 1500  # the opening of a record that names its body and date
# "Huntsville City Council", "City of Rivergrove City Council", "Manhattan City Commission", "Board of Supervisors"
_BODY = re.compile(
    r"\b((?:(?:City|Town|Village|County|Borough)[ \t]+of[ \t]+)?(?:[A-Z][A-Za-z.'’-]+[ \t]+){0,3}"
    r"(?:City|Town|Village|County|Borough|Township|Parish)?[ \t]*"
    r"(?:Council|Commission|Board[ \t]+of[ \t]+(?:Supervisors|Aldermen|Commissioners|Trustees|Education)|Board|Committee))\b"
)
_NOT_PLACE = re.compile(r"^(?:the|a|an|of|regular|special|joint|meeting|minutes|agenda|and|work|session)\s+", re.I)
KINDS = ("agenda", "minutes", "transcript")
_KIND_WORDS = {
    "minutes": re.compile(r"\bminutes\b", re.I),
    "agenda": re.compile(r"\bagenda\b|\border\s+of\s+business\b|\bdocket\b|\bnotice\s+of\s+(?:a\s+)?(?:\w+\s+)?meeting\b",
                         re.I),
}


@dataclass(frozen=True)
class MeetingFacts:
    """The record kind, the body that met and the date, as detected; None where nothing said so."""

    kind: str  # agenda | minutes | transcript
    body: str | None
    date: dt.date | None

    @property
    def meeting_id(self) -> str | None:
        """``{date}:{body slug}``: what an agenda, its minutes and its transcript share; None without a date."""
        if self.date is None:
            return None
        return f"{self.date.isoformat()}:{slug(self.body) if self.body else 'meeting'}"


def slug(s: str) -> str:
    """Lower-case words joined by hyphens: ``Huntsville City Council`` -> ``huntsville-city-council``."""
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")


def _date(y: int, m: int, d: int) -> dt.date | None:
    try:
        return dt.date(y, m, d)
    except ValueError:
        return None


def meeting_date(name: str, text: str) -> dt.date | None:
    """The meeting's date: from the file name if it holds one, else the first date written in the opening text."""
    for m in _ISO_NAME.finditer(name):
        got = _date(int(m[1]), int(m[2]), int(m[3]))
        if got:
            return got
    for m in _US_NAME.finditer(name):
        year = int(m[3]) + (2000 if len(m[3]) == 2 else 0)
        got = _date(year, int(m[1]), int(m[2]))
        if got:
            return got
    written = _WRITTEN.search(text[:HEAD_CHARS])
    return _date(int(written[3]), _MONTHS[written[1].lower()], int(written[2])) if written else None


def meeting_body(text: str) -> str | None:
    """The governing body named in the opening text (``Rivergrove City Council``; caps lines read as title case)."""
    head = text[:HEAD_CHARS]
    return _body_in(head) or _body_in(head.title())


def _body_in(head: str) -> str | None:
    for m in _BODY.finditer(head):
        body = " ".join(m[1].split())
        while _NOT_PLACE.match(body):
            body = _NOT_PLACE.sub("", body, count=1)
        if len(body.split()) >= 2:
            return body
    return None


def record_kind(name: str, text: str, *, motions: int, transcript: bool) -> str | None:
    """``transcript``, ``minutes`` or ``agenda``: by what the record is, else by what it calls itself.

    Minutes record motions and votes; an agenda announces items. A record that calls itself
    neither (``agenda``, ``order of business``, ``docket``, ``notice of … meeting``, ``minutes``) and records no motion is
    neither: numbered sections alone are no agenda (an ordinance has them).
    """
    if transcript:
        return "transcript"
    head = f"{name}\n{text[:HEAD_CHARS]}"
    says_minutes = bool(_KIND_WORDS["minutes"].search(head))
    says_agenda = bool(_KIND_WORDS["agenda"].search(head))
    if says_minutes and (motions or not says_agenda):
        return "minutes"
    if says_agenda:
        return "agenda"
    return "minutes" if motions else None
