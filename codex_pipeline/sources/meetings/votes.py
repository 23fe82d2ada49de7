"""Motions and their votes in council minutes, as char offsets so the vote line can be cited.

Minutes state a motion in a few house styles (``Motion: X moved …``, ``M/S X/Y``, ``On a motion by
X``, ``Moved by X, seconded by Y``) and its vote as a result sentence (``Motion passed 5-0.``), a roll
call (``AYES: … NOES: …``, ``Roll call: Smith - aye; …``) or both. The text is a PDF's, wrapped
mid-sentence, so patterns let whitespace span line breaks. Rules:

* a motion needs a cue (those styles, or a capitalized name + ``moved`` confirmed by a seconder or a
  vote close after it), so "he moved to Portland" is none; a motion stops where the next one starts;
* a vote with no statement before it (``AYES:`` after an item title) is a motion without mover when
  it is unmistakable (a tally, a roll call of two categories, "the motion …");
* a tally (``5-0``, ``four to one``, ``5-1-1`` = ayes-noes-abstentions, ``Ayes: 7``) wins over the
  number of names listed when they disagree, and the names stay as listed; without one a category
  counts its names (``None``/``-``: 0), and is ``None`` when the minutes are silent on it;
* a result not stated is inferred from the counts (more ayes than noes: passed, else failed);
  ``unanimous`` is stated ("unanimously", "all in favor") or a tally with no noes nor abstentions.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_NUM_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
              "fifteen sixteen seventeen eighteen nineteen twenty").split()
_NUM = r"(?i:\d{1,2}|" + "|".join(_NUM_WORDS) + r")"
# A tally: ayes-noes[-abstentions], "5-0", "4 to 1", "five to two", "5-1-1"; not inside dates or ids.
_TALLY = re.compile(rf"(?<![\w.#/-])(?P<a>{_NUM})[ \t]*(?:[-–—]|\bto\b)[ \t]*(?P<n>{_NUM})"
                    rf"(?:[ \t]*[-–—][ \t]*(?P<x>{_NUM}))?(?![\w/-]|\.\d)")

# A person as minutes write them: an optional title, then up to four capitalized words or initials.
# Words that open sentences or vote lines are never part of a name. Atomic: no backtracking inside.
_TITLE = (r"(?:(?:Vice|Deputy)[ \t]+)?(?:Mayor|Council(?:[ \t]*[Mm]ember|or|lor|man|woman)s?|Commissioners?"
          r"|Alder(?:man|men|woman|person)s?|Supervisors?|Trustees?|Directors?|Chair(?:man|woman|person)?"
          r"|President|Board[ \t]+Members?|Members?|Mr\.|Ms\.|Mrs\.|Dr\.)")
_STOP = (r"(?!(?:He|She|They|We|I|You|His|Her|Their|Our|The|Then|And|It|All|On|Upon|With|Also|After|Later|Next"
         r"|Finally|Motion|MOTION|Moved|Seconded|Second|Carried|Passed|Vote|Roll|Ayes?|AYES?|Noes|NOES|Mayor|Council\w*"
         r"|Commissioners?|Alder\w+|Supervisors?|Trustees?|Directors?|Chair\w*|President|Board|Members?|Mr|Ms|Mrs|Dr)\b)")
_WORD = rf"{_STOP}(?:[A-Z]\.(?=[ \t]+[A-Z])|[A-Z][A-Za-z'’-]*)"
_NAME = rf"(?<![\w'’-])(?>{_TITLE}(?:\s+{_WORD}(?:[ \t]+{_WORD}){{0,3}})?|{_WORD}(?:[ \t]+{_WORD}){{0,3}})"
_NAMES = rf"{_NAME}(?:(?:[ \t]*,[ \t]*(?:and\s+)?|\s+and\s+|[ \t]*&[ \t]*){_NAME}){{0,12}}"
_MOVES = r"(?:moved|moves|made[ \t]+(?:a|the)[ \t]+motion)\b"

# Where a motion statement starts, one alternative per house style (m1..m5: the mover).
_CUE = re.compile(rf"""
    (?P<label>\b(?:MOTION|Motion)[ \t]*:[ \t]*(?:(?P<m1>{_NAME})\s+{_MOVES})?)       # Motion: X moved …
  | \bM/S(?P<c>/C)?\b[ \t]*:?[ \t]*(?P<m2>{_NAME})[ \t]*/[ \t]*(?P<s2>{_NAME})       # M/S Brown/Green (/C: carried)
  | \b(?i:on|upon)\s+(?:a\s+|the\s+)?motion\s+(?:by|of|from)\s+(?P<m3>{_NAME})         # On a motion by X
  | \b(?:It\s+was\s+)?(?i:moved|motion(?:\s+to\s+[^.;:\n]{{1,80}}?)?(?:\s+made)?)\s+(?i:by)\s+(?P<m4>{_NAME})
                                                                    # Moved by X / Motion (to approve …) by X
  | (?P<bare>(?P<m5>{_NAME})\s+{_MOVES})                                           # X moved … (needs confirming)
""", re.X)
_SECONDER = re.compile(rf"""
    (?i:second(?:ed)?)\s+(?:by|from)\s+(?P<a>{_NAME})                # seconded by X
  | (?i:second(?:ed)?)[ \t]*:[ \t]*(?P<b>{_NAME})                    # Second: X
  | (?P<c>{_NAME})\.?\s+seconded\b                                   # X seconded (a PDF may put "." before it)
  | (?P<d>{_NAME})\s+(?:provided|gave|offered)\s+(?:a|the)\s+second\b
""", re.X)

_AT_START = r"(?:(?<![^\n])|(?<=[.;:,(])|(?<=[.;:,(][ \t]))[ \t]*"  # line start or after punctuation
_VERBS = r"passed|carried|failed|approved|adopted|defeated|lost|tabled|withdrawn|died|prevailed|did\s+not\s+(?:pass|carry)"
# A vote's opening words; the piece runs to the end of its sentence.
_RESULT = re.compile(rf"""
    (?P<lack>(?i:(?:the\s+)?motion\s+)?(?i:died|failed)\s+(?i:for\s+)?(?i:lack|want)\s+of\s+(?:a\s+)?second)
  | (?P<motion>\b(?i:(?:the|said|main)\s+)?(?i:motion)(?:\s+(?:to|as)\s+[^.;:\n]{{1,80}}?)?\s+
        (?i:was\s+|has\s+|then\s+)?(?i:unanimously\s+)?(?P<v1>(?i:{_VERBS}))\b)       # The motion passed
  | (?P<it>\b[Ii]t\s+(?:was\s+)?(?:unanimously\s+)?(?P<v2>passed|carried|failed|approved|adopted)
        (?=\s*(?:(?i:unanimously)|{_NUM}\b|by|on\b|\.)))                                # It passed 4-0
  | {_AT_START}(?P<v3>Passed|Carried|Approved|Adopted|Failed|Defeated|Moved|PASSED|CARRIED|APPROVED|ADOPTED
        |FAILED|DEFEATED|MOVED)                                                       # Carried 5-0. / Moved 5-0.
        (?=[ \t]+(?:(?i:unanimously)|{_NUM}\b|by\s+a|on\s+a)|\.|[ \t]*\()
  | (?:\band|,)\s+(?:was\s+)?(?P<v4>passed|carried|approved|adopted|failed)                # …, and carried 5-0
        (?=[ \t]+(?:(?i:unanimously)|{_NUM}\b|by\s+a|on\s+a))
  | (?P<voted>(?:\b(?:[Tt]he\s+)?[A-Z][a-z]+\s+)?voted\s+(?=(?i:unanimously)|{_NUM}\b|by\s+a))  # the Board voted 6-1
  | (?P<all>\bAll\s+(?:in\s+favou?r|ayes|voted\s+(?:aye|yes|in\s+favou?r))\b)          # All in favor.
  | (?P<vote>\b(?:Vote|VOTE|Final\s+vote)[ \t]*:)                                       # Vote: 5-0
  | (?P<withdrew>\bwithdrew\s+(?:(?:his|her|their|the)\s+)?motion\b)
""", re.X)
_LABEL_WORDS = r"ayes?|yeas?|yes|noes|nays?|nos?|opposed|in\s+favou?r|absent|excused|abstain(?:ed|ing|s)?|abstentions?|recused"
# AYES: … at a line start or after punctuation; in capitals also after a space ("AYES: 5 NOES: 0").
_LABEL = re.compile(rf"(?:{_AT_START}(?P<label>(?i:{_LABEL_WORDS}))|(?<=[ \t])(?P<caps>AYES|YEAS|NOES|NAYS|ABSENT"
                    r"|EXCUSED|ABSTAIN(?:ED|ING|S)?|ABSTENTIONS?|RECUSED))[ \t]*:")
# A label's value: to ";", a sentence's "." or the line end (a line ending in "," or "and" goes on).
_VALUE = re.compile(r"(?:,[ \t]*\n|\band[ \t]*\n|[^;\n.]|\.(?=\S))*")
_INNER_LABEL = re.compile(rf"\s(?=(?i:{_LABEL_WORDS})[ \t]*:)")
_NONE = re.compile(r"(?i)none|n/?a|nobody|-+|[–—]")
_ROLL = re.compile(r"\b(?i:roll[ -]?call)(?:\s+(?i:vote))?[ \t]*:?")
_ROLL_ENTRY = re.compile(rf"[ \t]*[;,]?\s*(?P<name>{_NAME})[ \t]*(?:[-–—:=][ \t]*)?"
                         r"(?P<vote>(?i:aye|yes|yea|nay|no|abstain(?:ed)?|absent|recused))\b")
# Who dissented, abstained or was away, said beside the result: "(Nguyen dissenting)", "with X voting no",
# "Councilor Ruble abstained."
_KINDS = r"dissenting|opposed|voting\s+(?:no|nay|against)|abstaining|abstained|absent|recused"
_TRAILER = re.compile(rf"""
    \((?P<n1>{_NAMES})\s+(?P<k1>{_KINDS})\)
  | \bwith\s+(?P<n2>{_NAMES})\s+(?P<k2>{_KINDS})\b
  | (?P<n3>{_NAMES})\s+(?P<k3>abstained|dissented|voted\s+(?:no|nay|against)|(?:was|were)\s+absent
        |recused\s+(?:him|her|them)sel(?:f|ves))\b
""", re.X)
_GAP = re.compile(r"[\s.,;:]*")
_BREAK = re.compile(r"[.!?;:](?=\s|$)|\n")
_ABBREV = re.compile(r"(?:\b(?:Mr|Ms|Mrs|Dr|St|No|Nos|vs|Jr|Sr|Inc|Co)|\b[A-Z])$")
_LINE_GOES_ON = re.compile(r"(?:,|\band|\bwith|\bby|\bof|\bthe|-)$")
_ITEM = r"(?:[A-Z]{1,2}-?)?\d{1,3}(?:\.\d{1,3})*[a-z]?"
_ITEMS = re.compile(rf"\b(?i:items?)\s+(?:(?i:nos?\.?|numbers?|\#)[ \t]*)?(?P<list>{_ITEM}"
                    rf"(?:(?:[ \t]*,[ \t]*(?:and[ \t]+)?|[ \t]+(?:and|&|through|thru|to)[ \t]+|[ \t]*[–—][ \t]*){_ITEM})*)\b")
_ITEM_TOKEN = re.compile(rf"{_ITEM}|through|thru|to|[–—]")
_PLURAL_TITLE = re.compile(r"^(?:Council[ \t]*[Mm]embers|Councilors|Councillors|Commissioners|Aldermen|Supervisors"
                           r"|Trustees|Directors|Board[ \t]+Members|Members)\s+")
_CATEGORIES = ("ayes", "noes", "abstain", "absent")
_RESULTS = {"fail": "failed", "defe": "failed", "lost": "failed", "did\n": "failed", "did ": "failed", "tabl": "tabled",
            "with": "withdrawn", "died": "died"}


@dataclass(frozen=True)
class Motion:
    """One motion and its vote, with offsets into the minutes' text so either can be cited."""

    start: int  # where the statement starts ("Motion:", "M/S", "Moved by", …), or the vote when none
    end: int  # exclusive: through the vote line, or through the statement when no vote follows
    mover: str | None  # as written: "Mayor Kibbey", "Brown"
    seconder: str | None
    result: str | None  # "passed" | "failed" | "tabled" | "withdrawn" | "died" (no second) | None
    ayes: tuple[str, ...]
    noes: tuple[str, ...]
    abstain: tuple[str, ...]
    absent: tuple[str, ...]
    ayes_count: int | None
    noes_count: int | None
    abstain_count: int | None
    absent_count: int | None
    unanimous: bool
    vote_span: tuple[int, int] | None  # the vote line(s), names said beside the result included
    items: tuple[str, ...]  # agenda items the statement names, ranges spelled out ("5.1".."5.4")


@dataclass
class _Cue:
    start: int
    end: int
    mover: str | None
    seconder: str | None = None
    label: bool = False  # "Motion:"; its mover may come in the next words ("MOTION: To …, moved by X")
    bare: bool = False  # "X moved": a motion only with a seconder or a vote close after it
    carried: bool = False  # M/S/C


@dataclass
class _Vote:
    """A vote put together from adjacent pieces: result sentence, labelled lists, roll call, trailers."""

    start: int
    end: int
    result: str | None = None
    unanimous: bool = False
    strong: bool = False
    tally: tuple[int, int, int | None] | None = None
    names: dict[str, list[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def absorb(self, other: _Vote) -> None:
        self.end = max(self.end, other.end)
        self.result = self.result or other.result
        self.unanimous |= other.unanimous
        self.strong |= other.strong
        self.tally = self.tally or other.tally
        for cat, names in other.names.items():  # a name said twice (label and trailer) counts once
            had = self.names.setdefault(cat, [])
            had.extend([n for n in names if n not in had])
        self.counts = {**other.counts, **self.counts}

    def decisive(self) -> bool:
        """Unmistakably a vote, even with no motion statement before it."""
        return bool(self.strong or self.tally or self.counts or len(self.names) >= 2)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUM_WORDS.index(word.lower())


def _name(raw: str) -> str:
    return " ".join(raw.split()).rstrip(".,")


def _split_names(raw: str) -> list[str]:
    raw = _PLURAL_TITLE.sub("", " ".join(raw.split()))
    return [n for n in (_name(p) for p in re.split(r",|;|&|\band\b", raw)) if n and not _NONE.fullmatch(n)]


def _category(word: str) -> str:
    w = word.lower()
    if w.startswith(("ay", "ye", "in")):
        return "ayes"
    if w.startswith(("no", "na", "op", "dissent", "voting", "voted")):
        return "noes"
    return "absent" if w.startswith(("abse", "exc", "was", "were")) else "abstain"


def _result(verb: str) -> str:
    """The normalized result of a result verb: passed, carried, approved, adopted, moved -> "passed"."""
    return _RESULTS.get(verb.lower()[:4], "passed")


def _sentence_end(text: str, pos: int, hi: int) -> int:
    """Where the sentence running at ``pos`` ends: PDF line wraps and stray periods do not end it."""
    hi = min(hi, pos + 600)  # no sentence of minutes is longer: bounds the work on text that has none
    for m in _BREAK.finditer(text, pos, hi):
        rest = text[m.end():min(hi, m.end() + 40)]
        following = rest.lstrip()[:1]
        if m.group() == "\n":
            line = text[text.rfind("\n", 0, m.start()) + 1:m.start()].rstrip()
            if rest.strip() and not rest.startswith("\n") and (following.islower() or _LINE_GOES_ON.search(line)):
                continue
            return m.start() - (len(text[:m.start()]) - len(text[:m.start()].rstrip(" \t")))
        if following.islower() or (m.group() == "." and _ABBREV.search(text, max(pos, m.start() - 4), m.start())):
            continue
        return m.end()
    return hi


def _pieces(text: str, lo: int, hi: int) -> list[_Vote]:
    """Every stretch that reports part of a vote, unmerged."""
    pieces = []
    for m in _RESULT.finditer(text, lo, hi):
        s = m.start("v4") if m["v4"] else m.start() + len(m.group()) - len(m.group().lstrip())
        e = max(m.end(), _sentence_end(text, m.end(), hi))
        verb = m["v1"] or m["v2"] or m["v3"] or m["v4"] or ("withdrawn" if m["withdrew"] else None)
        tally = None if m.group("lack") else _TALLY.search(text, m.start(), e)
        piece = _Vote(s, e, "died" if m.group("lack") else _result(verb) if verb else None,
                      bool(m.group("all") or re.search(r"(?i)\bunanimous", text[s:e])),
                      bool(m.group("lack") or m.group("motion")))
        if tally:
            x = tally.group("x")
            piece.tally = (_number(tally["a"]), _number(tally["n"]), _number(x) if x else None)
        pieces.append(piece)
    for m in _LABEL.finditer(text, lo, hi):
        v = _VALUE.match(text, m.end(), min(hi, m.end() + 600))  # a roll call line, not a page
        value_end = v.end() if v else m.end()
        inner = _INNER_LABEL.search(text, m.end(), value_end)
        value_end = inner.start() if inner else value_end
        value = text[m.end():value_end].strip()
        label = "label" if m["label"] else "caps"
        piece = _Vote(m.start(label), m.end() + len(text[m.end():value_end].rstrip()))
        cat = _category(m[label])
        count = re.match(rf"{_NUM}\b", value)
        if count:
            piece.counts[cat] = _number(count.group())
            listed = re.search(r"\((.*)\)", value)
            piece.names[cat] = _split_names(listed.group(1)) if listed else []
        else:
            piece.names[cat] = [] if _NONE.fullmatch(value.rstrip(".")) else _split_names(value)
        pieces.append(piece)
    for m in _ROLL.finditer(text, lo, hi):
        piece, pos = _Vote(m.start(), m.end()), m.end()
        while (entry := _ROLL_ENTRY.match(text, pos, hi)) and entry.end() > pos:
            vote = entry["vote"].lower()
            cat = "ayes" if vote in ("aye", "yes", "yea") else "noes" if vote in ("nay", "no") else _category(vote)
            piece.names.setdefault(cat, []).append(_name(entry["name"]))
            piece.end = pos = entry.end()
        piece.strong = sum(map(len, piece.names.values())) >= 2
        pieces.append(piece)
    return sorted(pieces, key=lambda p: (p.start, -p.end))


def _trailers(text: str, vote: _Vote, hi: int) -> None:
    """Adds the names said beside the result, and the trailing sentences that say them, to ``vote``."""
    pos = vote.start
    while m := _TRAILER.search(text, pos, vote.end) or _TRAILER.match(text, _skip_gap(text, vote.end, hi), hi):
        n = next(g for g in ("1", "2", "3") if m.group("n" + g))
        cat = _category(m.group("k" + n))
        vote.names.setdefault(cat, []).extend(_split_names(m.group("n" + n)))
        if m.end() > vote.end:
            vote.end = max(m.end(), _sentence_end(text, m.end(), hi))
        pos = m.end()


def _skip_gap(text: str, pos: int, hi: int) -> int:
    gap = _GAP.match(text, pos, hi)
    return gap.end() if gap else pos


def _vote_groups(text: str, lo: int, hi: int, cues: list[_Cue]) -> list[_Vote]:
    """Adjacent pieces merged into votes; none crosses a motion cue."""
    groups: list[_Vote] = []
    starts = [c.start for c in cues] + [hi]
    for p in _pieces(text, lo, hi):
        i = bisect.bisect_right(starts, p.start)
        if i and i <= len(cues) and p.start < cues[i - 1].end:
            continue  # inside a motion statement's cue
        p.end = min(p.end, starts[i] if i < len(starts) else hi)
        if groups and (p.start <= groups[-1].end or _skip_gap(text, groups[-1].end, p.start) == p.start):
            groups[-1].absorb(p)
        else:
            groups.append(p)
    for i, g in enumerate(groups):
        barrier = starts[bisect.bisect_left(starts, g.end)]
        _trailers(text, g, min(barrier, groups[i + 1].start) if i + 1 < len(groups) else barrier)
    return [g for g in groups if g.result or g.tally or g.names or g.counts or g.unanimous]


def _cues(text: str, lo: int, hi: int) -> list[_Cue]:
    cues: list[_Cue] = []
    for m in _CUE.finditer(text, lo, hi):
        mover = next((m[g] for g in ("m1", "m2", "m3", "m4", "m5") if m[g]), None)
        cue = _Cue(m.start(), m.end(), _name(mover) if mover else None, _name(m["s2"]) if m["s2"] else None,
                   bool(m["label"]), bool(m["bare"]), bool(m["c"]))
        last = cues[-1] if cues else None
        if (last and last.label and last.mover is None and not cue.label and cue.start - last.end < 200
                and not _RESULT.search(text, last.end, cue.start)):  # "MOTION: To approve …, moved by X"
            last.mover, last.seconder, last.carried, last.end = cue.mover, cue.seconder, cue.carried, cue.end
        else:
            cues.append(cue)
    return cues


def _seconder(text: str, cue: _Cue, hi: int) -> tuple[str | None, int]:
    """The seconder named in the statement's first three sentences, and where that mention ends."""
    end = pos = cue.end
    for _ in range(3):
        pos += len(text[pos:hi]) - len(text[pos:hi].lstrip())
        if pos < hi:
            end = pos = max(pos + 1, _sentence_end(text, pos, hi))
    m = _SECONDER.search(text, cue.end, min(end, hi))
    if m is None:
        return None, cue.end
    return _name(next(m[g] for g in "abcd" if m[g])), m.end()


def _motion(text: str, cue: _Cue | None, vote: _Vote | None, stop: int) -> Motion:
    mover = seconder = None
    items: list[str] = []
    start, end = (vote.start, vote.end) if vote else (0, 0)
    if cue:
        statement_end = vote.start if vote else stop
        mover, seconder, after = cue.mover, cue.seconder, cue.end
        if seconder is None:
            seconder, after = _seconder(text, cue, statement_end)
        start = cue.start
        if vote is None:  # the statement: its first sentence, or through the seconder's
            end = max(_sentence_end(text, cue.end, stop), _sentence_end(text, after, stop) if seconder else 0)
            end = max(cue.end, len(text[:end].rstrip()))
        for m in _ITEMS.finditer(text, cue.start, statement_end):
            items.extend(i for i in _items(m["list"]) if i not in items)
    names, counts = (vote.names, vote.counts) if vote else ({}, {})
    number: dict[str, int | None] = {}
    for i, cat in enumerate(_CATEGORIES):
        from_tally = vote.tally[i] if vote and vote.tally and i < 3 else None
        number[cat] = (from_tally if from_tally is not None else counts.get(cat)
                       if cat in counts else len(names[cat]) if cat in names else None)
    ayes, noes, abstain = number["ayes"], number["noes"], number["abstain"]
    result = vote.result if vote else None
    if result is None and cue and cue.carried:
        result = "passed"
    if result is None and vote and (vote.unanimous or (ayes is not None and noes is not None)):
        result = "passed" if vote.unanimous or (ayes or 0) > (noes or 0) else "failed"
    unanimous = bool(vote and (vote.unanimous or (ayes and noes == 0 and not abstain)))
    listed = {c: tuple(names.get(c, ())) for c in _CATEGORIES}
    return Motion(start, end, mover, seconder, result, listed["ayes"], listed["noes"], listed["abstain"],
                  listed["absent"], ayes, noes, abstain, number["absent"], unanimous,
                  (vote.start, vote.end) if vote else None, tuple(items))


def _items(listing: str) -> list[str]:
    """Agenda item numbers in "5.1 through 5.4", "3, 4 and 7", "A-1 through A-5"; ranges spelled out."""
    out: list[str] = []
    tokens = _ITEM_TOKEN.findall(listing)
    for i, tok in enumerate(tokens):
        if not re.match(r"\d|[A-Z]", tok):
            continue
        prev = tokens[i - 1] if i else ""
        a, b = re.fullmatch(r"(.*?)(\d+)[a-z]?", out[-1] if out else ""), re.fullmatch(r"(.*?)(\d+)", tok)
        if prev in ("through", "thru", "to", "–", "—") and a and b and a[1] == b[1] and 0 < int(b[2]) - int(a[2]) <= 50:
            out.extend(f"{b[1]}{n}" for n in range(int(a[2]) + 1, int(b[2]) + 1))
        else:
            out.append(tok)
    return out


def find_motions(text: str, start: int = 0, end: int | None = None) -> list[Motion]:
    """Motions in ``text[start:end]`` in text order, offsets into ``text`` (the caller passes one agenda
    item's stretch, so a vote never attaches to a motion of another item)."""
    lo, hi = max(0, start), len(text) if end is None else max(0, min(end, len(text)))
    if lo >= hi:
        return []
    cues = _cues(text, lo, hi)
    votes = _vote_groups(text, lo, hi, cues)

    vote_starts = [v.start for v in votes]

    def window(i: int, among: list[_Cue]) -> tuple[int, list[_Vote]]:
        """The end of the i-th motion's reach (the next motion) and the votes in it."""
        stop = among[i + 1].start if i + 1 < len(among) else hi
        inside = votes[bisect.bisect_left(vote_starts, among[i].end):bisect.bisect_left(vote_starts, stop)]
        return stop, [v for v in inside if v.end <= stop]

    kept = []
    for i, cue in enumerate(cues):
        stop, mine = window(i, cues)
        first_vote = mine[0].start if mine else stop
        if not cue.bare or _seconder(text, cue, first_vote)[0] or (mine and first_vote - cue.end <= 400):
            kept.append(cue)
    first = kept[0].start if kept else hi
    motions = [_motion(text, None, v, hi) for v in votes if v.end <= first and v.decisive()]
    for i, cue in enumerate(kept):
        stop, mine = window(i, kept)
        motions.append(_motion(text, cue, mine[0] if mine else None, stop))
        motions.extend(_motion(text, None, v, stop) for v in mine[1:] if v.decisive())
    return motions
