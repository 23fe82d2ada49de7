"""The agenda-item outline of an agenda or minutes: numbered items, sub-items and section headings.

Cities number items every way (``1.``, ``5.1``, ``A-3``, ``Item 12``, ``a.``, ``iv.``) and
nest them under all-caps section headings (``NEW BUSINESS``, ``CONSENT AGENDA``) or not at all.
What tells an item from a numbered list in the minutes' prose is the sequence: a marker opens
an item only when it is the next number of its style at its level (``b.`` after ``a.``), or the
first of a new style under the item open above it (``a.`` under ``9.``). A ``1.`` that restarts
a style already open at that level is text (the amendment list inside a motion), and so is a
``5.100.`` that starts nowhere.

Section headings are parents when the numbering restarts under them (Rivergrove's minutes:
``1.`` under ``NEW BUSINESS`` and again under ``OLD BUSINESS``); when one numbered series runs
through the document (Huntsville's agendas), they are unnumbered items beside the numbered
ones. Items' keys are the document's own numbers joined by dots (``9``, ``9.a``, ``5.1``),
a heading's key its slug (``new-business``), so ``section_id = item.{key}``.

A numbered list after a line that introduces conditions ("Conditions of approval:") is the
item's conditions, never items.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from codex_pipeline.sources.meetings.facts import slug

# A marker at the start of a line: optional "Item"/"Agenda Item", the number, its punctuation, the title.
_MARKER = re.compile(
    r"[ \t]*(?:(?P<word>(?:agenda\s+)?item(?:\s+no\.?)?)\s+)?"
    r"(?P<num>\d{1,3}(?:\.\d{1,3}){0,3}|[A-Z]{1,2}-\d{1,3}|[a-z]{1,2}|[A-Z]|[ivxlc]{1,5}|[IVXLC]{1,5})"
    r"(?P<close>[.)]|:|\s+[-–—]\s|(?=[ \t]))[ \t]+(?P<title>\S[^\n]*)",
    re.I,
)
_PREFIXED = re.compile(r"(?P<letter>[A-Za-z]{1,2})-(?P<n>\d{1,3})$")
_ROMAN = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}
_LETTERS = re.compile(r"[A-Za-z]")
_HEADING_CHARS = re.compile(r"[A-Z0-9 &/,.:;'’()\-–—#]+")
_CONDITIONS_INTRO = re.compile(
    r"(?:(?:the\s+following\s+)?conditions?(?:\s+of\s+approval)?|subject\s+to\s+the\s+following(?:\s+conditions?)?)"
    r"[^\n]{0,40}:\s*$",
    re.I,
)
_LIST_MARKER = re.compile(r"[ \t]*(?:\d{1,3}[.)]|[a-z][.)]|[•●▪◦·\-–*])[ \t]+\S")
CONSENT = re.compile(r"\bconsent\b|\b(?:approved|adopted|acted\s+on)\s+(?:in|by)\s+(?:one|a\s+single)\s+motion\b", re.I)
_TITLE_WORDS = re.compile(r"\b(?:agenda|minutes|meeting|council|commission|board|committee)\b", re.I)
MAX_HEADING_CHARS = 90
MAX_HEADING_WORDS = 12
MAX_TITLE_CHARS = 300
MAX_KEY_CHARS = 40  # a heading's slug key is cut here (section ids stay short)
WRAPPED_LINE_CHARS = 50  # a line this long that ends mid-sentence was wrapped: the caps words under it continue it


@dataclass(frozen=True)
class Item:
    """One agenda item: the heading line(s) and its own text up to the next item of any level."""

    key: str  # "9", "9.a", "new-business.1": the section id is item.{key}
    number: str | None  # as printed ("9", "a", "5.1", "A-3"); None for an unnumbered section heading
    title: str
    start: int  # the marker line's first char
    title_end: int  # end of the title text
    end: int  # start of the next item (any level), or the end of the text
    parent: str | None  # the key of the item it is a sub-item of
    depth: int
    consent: bool = False  # a consent calendar: its sub-items are acted on in one motion


@dataclass(frozen=True)
class Condition:
    """One condition of approval: a list entry after a line that introduces conditions."""

    start: int
    end: int


@dataclass
class Outline:
    """The items of a document in text order, and the conditions found in their text."""

    items: list[Item] = field(default_factory=list)
    conditions: list[Condition] = field(default_factory=list)
    mode: str = "flat"  # "flat": headings beside numbered items; "nested": numbering restarts under headings


@dataclass(frozen=True)
class _Head:
    start: int
    title_end: int
    number: str | None
    title: str
    style: str
    ordinal: int | None  # position in its style's sequence; None for headings
    alternatives: tuple[tuple[str, int], ...] = ()  # other readings ("i" is the letter i or the roman one)


def lines(text: str, skip: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
    """``(start, end)`` of each non-blank line outside the ``skip`` spans (running headers and footers)."""
    out = []
    pos = 0
    skips = sorted(skip)
    k = 0
    for line in text.split("\n"):
        s, e = pos, pos + len(line)
        pos = e + 1
        while k < len(skips) and skips[k][1] <= s:
            k += 1
        if line.strip() and not (k < len(skips) and skips[k][0] <= s < skips[k][1]):
            out.append((s, e))
    return out


def _roman(s: str) -> int | None:
    s = s.lower()
    if not s or any(c not in _ROMAN for c in s):
        return None
    total = 0
    for a, b in zip(s, s[1:] + " "):
        v = _ROMAN[a]
        total += -v if b in _ROMAN and _ROMAN[b] > v else v
    return total if 0 < total < 40 else None


def _letters(s: str) -> int:
    """a=1 … z=26, aa=27, ab=28: how agendas go on after z."""
    s = s.lower()
    return ord(s[0]) - 96 if len(s) == 1 else 26 * (ord(s[0]) - 96) + ord(s[1]) - 96


def _readings(num: str) -> list[tuple[str, int]]:
    """``(style, ordinal)`` readings of a printed number, the likeliest first."""
    if num.isdigit():
        return [("arabic", int(num))]
    if "." in num:
        parts = num.split(".")
        return [(f"dotted{len(parts)}:{'.'.join(parts[:-1])}", int(parts[-1]))]
    m = _PREFIXED.match(num)
    if m:
        return [(f"prefixed:{m['letter'].upper()}", int(m["n"]))]
    case = "upper" if num.isupper() else "lower"
    out: list[tuple[str, int]] = []
    if len(num) <= 2 and (len(num) == 1 or num[0] == num[1] or num[0] == "a"):
        out.append((f"letter-{case}", _letters(num)))
    r = _roman(num)
    if r is not None:
        out.append((f"roman-{case}", r))
    return out


def _heading(line: str) -> bool:
    """An all-caps section heading line: ``NEW BUSINESS``, ``CALL TO ORDER AND ROLL CALL``; not a code or a sentence."""
    s = line.strip()
    letters = len(_LETTERS.findall(s))
    return (letters >= 4 and len(s) <= MAX_HEADING_CHARS and len(s.split()) <= MAX_HEADING_WORDS
            and bool(_HEADING_CHARS.fullmatch(s)) and not s.endswith((",", ".", ";")))


def _mid_sentence(text: str, prev: tuple[int, int], start: int) -> bool:
    """The line goes on the sentence of the line directly above it (a caps word wrapped onto its own line)."""
    above = text[prev[0] : prev[1]].rstrip()
    return prev[1] + 1 == start and len(above) >= WRAPPED_LINE_CHARS and (above[-1].isalnum() or above[-1] in ",-–&") \
        and not _heading(above) and not _MARKER.match(above)


def _candidates(text: str, spans: list[tuple[int, int]], excluded: set[int]) -> list[_Head]:
    heads: list[_Head] = []
    prev_caps_item = False
    for i, (s, e) in enumerate(spans):
        if i in excluded:
            prev_caps_item = False
            continue
        line = text[s:e]
        m = _MARKER.match(line)
        readings = _readings(m["num"]) if m else []
        bare = m is not None and not m["close"] and not m["word"] and not re.search(r"\d[.\-]|[A-Za-z]-\d", m["num"])
        if m and readings and not bare and not (m["close"] == ":" and not m["word"]):
            title_end = _title_end(text, spans, i, s + m.start("title"))
            title = " ".join(text[s + m.start("title") : title_end].split())
            style, ordinal = readings[0]
            heads.append(_Head(s, title_end, m["num"], title, style, ordinal, tuple(readings[1:])))
            prev_caps_item = m["title"].isupper()
        elif _heading(line) and not (i and _mid_sentence(text, spans[i - 1], s)):
            if prev_caps_item and heads and heads[-1].title_end == spans[i - 1][1]:
                h = heads[-1]  # a wrapped caps title: "17. HUNTSVILLE" / "UTILITIES ITEMS"
                heads[-1] = _Head(h.start, e, h.number, f"{h.title} {line.strip()}", h.style, h.ordinal, h.alternatives)
                continue
            heads.append(_Head(s, e, None, line.strip(), "heading", None))
            prev_caps_item = False
        else:
            prev_caps_item = False
    return heads


def _title_end(text: str, spans: list[tuple[int, int]], i: int, start: int) -> int:
    """The title runs on over wrapped lines that start lower-case, up to the first sentence end."""
    end = spans[i][1]
    j = i + 1
    while (j < len(spans) and end - start < MAX_TITLE_CHARS and not text[start:end].rstrip().endswith((".", ":", ")"))
           and text[spans[j][0] : spans[j][1]].lstrip()[:1].islower() and spans[j][0] == end + 1
           and not _MARKER.match(text[spans[j][0] : spans[j][1]])):
        end = spans[j][1]
        j += 1
    return end


def _condition_lines(text: str, spans: list[tuple[int, int]]) -> tuple[set[int], list[Condition]]:
    """Lines that belong to condition lists (never items), and one condition per list entry."""
    excluded: set[int] = set()
    conditions: list[Condition] = []
    i = 0
    while i < len(spans):
        if not _CONDITIONS_INTRO.search(text[spans[i][0] : spans[i][1]]):
            i += 1
            continue
        j = i + 1
        entries: list[list[int]] = []
        expected = 1
        while j < len(spans):
            line = text[spans[j][0] : spans[j][1]]
            marker = _LIST_MARKER.match(line)
            number = re.match(r"[ \t]*(\d{1,3})[.)]", line)
            if marker and number and int(number[1]) != expected:
                break  # the list's numbering ended: this is the agenda's next item
            if marker:
                expected += 1
                entries.append([j])
            elif entries and not _heading(line) and not _MARKER.match(line) and (
                    line.lstrip()[:1].islower() or not text[spans[j - 1][0] : spans[j - 1][1]].rstrip().endswith(
                        (".", "!", "?", ":", ";"))):
                entries[-1].append(j)  # the entry wraps onto this line
            else:
                break
            j += 1
        for entry in entries:
            excluded.update(entry)
            conditions.append(Condition(spans[entry[0]][0] + _indent(text, spans[entry[0]][0]), spans[entry[-1]][1]))
        i = max(j, i + 1)
    return excluded, conditions


def _indent(text: str, s: int) -> int:
    return len(text[s:]) - len(text[s:].lstrip(" \t"))


def _nest(heads: list[_Head], headings_are_parents: bool) -> list[tuple[_Head, int]]:
    """The accepted heads with their depth (see the module docstring for the rule)."""
    stack: list[str] = []  # styles open, by depth
    last: dict[str, int] = {}  # style -> ordinal of its last accepted item at its open depth
    out: list[tuple[_Head, int]] = []
    for h in heads:
        if h.style == "heading":
            if headings_are_parents:
                depth = stack.index("heading") if "heading" in stack else len(stack)
                del stack[depth:]
                stack.append("heading")
                for st in list(last):
                    if st != "heading":
                        del last[st]
            else:
                depth = 0
            out.append((h, depth))
            continue
        accepted = None
        for style, ordinal in ((h.style, h.ordinal), *h.alternatives):
            if style in stack and last.get(style, 0) + 1 == ordinal:
                accepted = (style, stack.index(style), ordinal)
                break
        if accepted is None:  # a new style opens at 1 ("I." is roman one before it is the letter i) ...
            first = not any(st != "heading" for st in stack)
            readings = [(st, o) for st, o in ((h.style, h.ordinal), *h.alternatives) if o is not None and st not in stack]
            for style, ordinal in sorted(readings, key=lambda r: r[1] != 1):
                if (ordinal == 1 or first) and _may_open(style, stack, out):  # ... or anywhere in an excerpt's first item
                    accepted = (style, len(stack), ordinal)
                    break
        if accepted is None:
            continue
        style, depth, ordinal = accepted
        del stack[depth + 1 :]
        if depth == len(stack):
            stack.append(style)
        for st in stack[depth + 1 :]:
            last.pop(st, None)
        for st in list(last):
            if st not in stack:
                del last[st]
        last[style] = ordinal
        out.append((h if style == h.style else _Head(h.start, h.title_end, h.number, h.title, style, ordinal), depth))
    return out


def _may_open(style: str, stack: list[str], accepted: list[tuple[_Head, int]]) -> bool:
    """A dotted number opens only under the item it extends (``5.1`` under ``5``)."""
    if style.startswith("dotted"):
        prefix = style.split(":", 1)[1]
        return bool(accepted) and accepted[-1][0].number is not None and any(
            h.number == prefix for h, _ in accepted[-8:])
    return True


def _title_lines_dropped(heads: list[_Head]) -> list[_Head]:
    """Without the caps lines that name the record before its first numbered item (``CITY COUNCIL REGULAR MEETING
    AGENDA``): the document's title, not an item (their text stays in the record's preamble)."""
    first = next((k for k, h in enumerate(heads) if h.number is not None), 0)
    return [h for k, h in enumerate(heads) if not (k < first and h.style == "heading" and _TITLE_WORDS.search(h.title))]


def _slug(title: str) -> str:
    """A heading's key: its words as a slug, at most :data:`MAX_KEY_CHARS`."""
    return slug(title)[:MAX_KEY_CHARS].strip("-") or "section"


def parse_outline(text: str, skip: Sequence[tuple[int, int]] = ()) -> Outline:
    """The items of ``text`` (an agenda's or minutes' page text), running lines in ``skip`` left out."""
    spans = lines(text, skip)
    excluded, conditions = _condition_lines(text, spans)
    heads = _title_lines_dropped(_candidates(text, spans, excluded))
    nested = _nest(heads, headings_are_parents=True)
    restarts = sum(1 for (h, d), nxt in zip(nested, nested[1:]) if h.style == "heading" and nxt[1] > d
                   and nxt[0].ordinal == 1)
    mode = "nested" if restarts >= 2 else "flat"
    accepted = nested if mode == "nested" else _nest(heads, headings_are_parents=False)
    items: list[Item] = []
    open_keys: list[str] = []  # key by depth
    used: set[str] = set()
    for k, (h, depth) in enumerate(accepted):
        del open_keys[depth:]
        parent = open_keys[-1] if open_keys else None
        own = h.number if h.number is not None else _slug(h.title)
        if h.number is not None and h.style.startswith(("dotted", "prefixed")):
            key = h.number
        else:
            key = f"{parent}.{own}" if parent is not None else own
        base, n = key, 2
        while key in used:
            key, n = f"{base}-{n}", n + 1
        used.add(key)
        open_keys.append(key)
        end = accepted[k + 1][0].start if k + 1 < len(accepted) else len(text)
        items.append(Item(key, h.number, h.title, h.start, h.title_end, end, parent, depth,
                          consent=bool(CONSENT.search(text[h.start : end]))))
    return Outline(items, conditions, mode)
