"""Permit fields chosen by what columns hold, not where they stand.

A crane-permit export has ``CONTRACTOR_1_STATE`` before its own status and
``CONTRACTOR_1_ADDRESS`` before the site address: a name pattern alone takes the
contractor's. So: columns of a repeated block (``CONTRACTOR_1_*``, ``OWNER_2_*``) are
people and companies and never give status, address or dates; status is the column whose
small vocabulary reads like permit states (issued, approved, closed …); address the one
whose values look like street addresses (a number, then words); dates by their header words
(``INDATE``, ``APPLIED``, ``ISSUED`` …) among date columns.
"""

from __future__ import annotations

import re
from collections import Counter

from codex_pipeline.sources.mapping.guess import ColumnGuess

BLOCK = re.compile(r"(?:^|[_\s.-])\d{1,2}(?:[_\s.-]|$)")
"""A repeated-block column: a number between separators (``CONTRACTOR_1_NAME``, ``Owner 2 Phone``)."""
_STATUS_WORDS = re.compile(
    r"\b(issued|approved|approval|closed|close|final(ed|ized)?|open|opened|pending|active|inactive|expired|"
    r"cancel+ed|cancel|void(ed)?|complete(d)?|in[- ]?progress|in[- ]?process|review|reviewing|withdrawn|hold|"
    r"denied|revoked|submitted|received|applied|application|accepted|ready|initiated|suspended|reissued|"
    r"completed|inspection|permit issued|under review|intake|finished|refused|rejected|abandoned|"
    r"extended|archived|new|granted)\b", re.I)
_STREET = re.compile(
    r"^\s*\d+[A-Za-z]?(?:[-/]\d+[A-Za-z]?)?\s+(?:[NSEW]\.?\s+)?[A-Za-z0-9][\w.'-]*(?:\s+[\w.'#-]+)*\s*$")
_STREET_WORD = re.compile(
    r"\b(st|street|ave|av|avenue|rd|road|dr|drive|blvd|boulevard|way|ln|lane|pl|place|ct|court|hwy|highway|"
    r"cres|crescent|terr?|terrace|pkwy|parkway|cir|circle|sq|square|trl|trail|row|close|gate|grove|hill|pike|"
    r"loop|point|green|park|mews|alley|route|rte)\b", re.I)
DATE_WORDS = {
    "applied_date": r"indate|in_date|appl|submit|receiv|filed|intake|creat|open|start|lodg",
    "issued_date": r"issu",
    "completed_date": r"complet|final|close|finish",
    "expires_date": r"expir",
}


def in_block(column: str) -> bool:
    """True for a column of a repeated block (``CONTRACTOR_1_STATE``): a person's or a company's, not the permit's."""
    return bool(BLOCK.search(column))


def status_score(g: ColumnGuess, values: list[str]) -> float:
    """How much a column reads like a permit status: the share of its values with a status word (0 if not a vocabulary)."""
    present = [v.strip() for v in values if v.strip()]
    if g.type not in ("string",) or not present or in_block(g.column):
        return 0.0
    counts = Counter(present)
    if len(counts) > 40 or len(counts) > max(len(present) // 3, 3):
        return 0.0
    share = sum(n for v, n in counts.items() if _STATUS_WORDS.search(v.replace("_", " "))) / len(present)
    return share + (0.3 if re.search(r"status|state|stage", g.column, re.I) else 0.0)


def address_score(g: ColumnGuess, values: list[str]) -> float:
    """The share of a column's values that look like a street address (``248 SADDLELAKE DR NE``)."""
    present = [v.strip() for v in values if v.strip()]
    if g.type not in ("string", "text") or not present or in_block(g.column):
        return 0.0
    street = sum(1 for v in present if _STREET.match(v) and (_STREET_WORD.search(v) or len(v.split()) >= 3))
    share = street / len(present)
    bonus = 0.2 if re.search(r"addr|location|site|street", g.column, re.I) else 0.0
    return share + bonus if share >= 0.5 else 0.0


def pick_status(guesses: list[ColumnGuess], cells: dict[str, list[str]]) -> ColumnGuess | None:
    """The column whose small vocabulary reads most like permit states (at least half its values)."""
    scored = [(status_score(g, cells[g.column]), g) for g in guesses]
    best = max(scored, key=lambda s: s[0], default=(0.0, None))
    return best[1] if best[0] >= 0.5 else None


def pick_address(guesses: list[ColumnGuess], cells: dict[str, list[str]]) -> ColumnGuess | None:
    """The column whose values look most like street addresses, most filled first among equals."""
    scored = [(address_score(g, cells[g.column]), g.filled, g) for g in guesses]
    best = max(scored, key=lambda s: (round(s[0], 1), s[1]), default=(0.0, 0, None))
    return best[2] if best[0] > 0 else None


def pick_dates(guesses: list[ColumnGuess]) -> dict[str, ColumnGuess]:
    """Date columns by header words, never a block's; ``applied_date`` falls back to the earliest-named date column."""
    dates = [g for g in guesses if g.type in ("date", "datetime") and not in_block(g.column)]
    out: dict[str, ColumnGuess] = {}
    for field, rx in DATE_WORDS.items():
        for alt in rx.split("|"):
            hit = next((g for g in dates if re.search(alt, g.column, re.I) and g not in out.values()), None)
            if hit is not None:
                out[field] = hit
                break
    if "applied_date" not in out:
        rest = [g for g in dates if g not in out.values()]
        if rest:
            out["applied_date"] = max(rest, key=lambda g: g.filled)
    return out
