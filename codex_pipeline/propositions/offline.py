"""The offline proposition extractor: deterministic, no model, every span exact.

Each chunk's source ranges of the canonical text are read line by line:

- a record's title line (``Permit BP-1 — City of Tacoma``) is a statement and names
  the chunk's *subject* (``Permit BP-1``: the title up to its first ``": "``, else up
  to its first ``" — "``);
- a ``Label: value`` line is a statement prefixed with that subject (``Permit BP-1``
  ``Status: Issued``); a value listing items with ``"; "`` gives one statement per item;
- a list item (``- ``, ``* ``, ``1.``) is a statement, prefixed with the line that
  introduced the list when that line ends with ``:``;
- prose is cut into sentences by ``sentencex`` (Wikimedia's rule-based segmenter,
  abbreviation-aware, character offsets), then each sentence at coordinated clauses
  (``; `` and ``, and/but/while/whereas/so`` before a clause with its own verb) and
  at coordinated verb phrases (``X needs a permit and must be …``: the second
  statement repeats the subject ``X``);
- a sentence or clause opening with a subject pronoun (``It``, ``They``, ``This``,
  ``These``, ``He``, ``She``) gets the previous sentence's subject, else the chunk's
  subject, in its place, when number (and, for ``he``/``she``, a personal title)
  agree; otherwise the pronoun stays.

Headings, code fences, tables and markup lines are not statements. A statement's
text is always its spans' slices joined by one space, so
``" ".join(canonical[s:e] for s, e in spans) == text`` holds for every row: nothing
is paraphrased, so nothing can be invented.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import sentencex

from codex_pipeline.propositions.base import (
    JOIN,
    ChunkInput,
    Extraction,
    ExtractResult,
    ExtractStats,
    Span,
    Statement,
)
from codex_pipeline.propositions.cost import Budget

NAME = "offline"
VERSION = "1"
PROMPT_VERSION = "none"
LANGUAGE = "en"
MAX_SUBJECT_WORDS = 8
MAX_TITLE_CHARS = 200
MAX_SUBJECT_CHARS = 80

AUX = frozenset(
    "is are was were be been being has have had will would shall should must may might can could does do did "
    "isn't aren't wasn't weren't hasn't haven't hadn't won't wouldn't shouldn't can't couldn't doesn't don't didn't".split()
)
COMMON_VERBS = frozenset(
    "uses use includes include requires require covers cover contains contain serves serve provides provide needs need "
    "carries carry points point takes take returns return supports support holds hold applies apply expires expire "
    "allows allow gives give makes make keeps keep reads read writes write sends send lists list shows show runs run "
    "remains remain becomes become lies lie sits sit owns own operates operate employs employ reports report "
    "accepts accept rejects reject creates create stores store adds add means mean matches match".split()
)
DETERMINERS = frozenset("the a an this that these those each every our its their his her my your all both no some".split())
NOT_SUBJECT_START = frozenset(
    "on in at for from to by with after before during under over since until when while if because although though "
    "as once however then there here also so and but or nor yet".split()
)
PRONOUNS_SINGULAR = frozenset({"it", "this"})
PRONOUNS_PLURAL = frozenset({"they", "these"})
PRONOUNS_PERSON = frozenset({"he", "she"})
PERSON_TITLE = re.compile(
    r"^(?:Mr|Mrs|Ms|Dr|Prof|Mayor|Commissioner|Councilmember|Councilman|Councilwoman|Inspector|Officer|Captain|"
    r"Chief|Judge|Senator|Director)\.?\s"
)
CLAUSE_CUT = re.compile(r";\s+|,\s+(?:and|but|while|whereas|so)\s+|\s+(?:and|but)\s+")
WORD = re.compile(r"\S+")
LABEL_LINE = re.compile(r"^([A-Z][A-Za-z0-9 /()&'-]{0,40}):(?:\s+|$)")
LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
FENCE = re.compile(r"^\s*(```|~~~)")
MARKUP = re.compile(r"^\s*(?:#|\||<|(?:import|export)\s|[=\-_*]{3,}\s*$|!\[)")
ITEM_CUT = re.compile(r";\s+")
UNDERLINE = re.compile(r"^\s*(?:={3,}|-{3,})\s*$")
SENTENCE_END = re.compile(r"[.!?…:;]['\")\]]*$")


@dataclass
class _Line:
    start: int
    end: int  # without the newline
    text: str


class OfflineExtractor:
    """Rule-based propositions with exact spans (see the module docstring)."""

    name = NAME
    version = VERSION
    prompt_version = PROMPT_VERSION

    def extract(self, chunks: Sequence[ChunkInput], budget: Budget | None = None) -> ExtractResult:
        """Statements of every chunk; ``budget`` is ignored (nothing here costs money)."""
        out = []
        for chunk in chunks:
            try:
                statements = propositions_of(chunk.canonical, chunk.sources)
            except Exception as exc:  # noqa: BLE001 - one odd chunk must not sink the partition
                out.append(Extraction(chunk.chunk_id, reject=f"offline extractor failed: {type(exc).__name__}: {exc}"))
                continue
            out.append(Extraction(chunk.chunk_id, statements))
        return ExtractResult(out, ExtractStats())


def propositions_of(text: str, sources: Sequence[Span]) -> list[Statement]:
    """Statements of the ranges ``sources`` of ``text``, in reading order, without repeats."""
    out: list[Statement] = []
    seen: set[tuple[Span, ...]] = set()
    for s0, e0 in sources:
        for spans in _region(text, s0, e0):
            if spans in seen:
                continue
            seen.add(spans)
            out.append(Statement(JOIN.join(text[a:b] for a, b in spans), spans, 1.0))
    return out


def sentence_spans(text: str, start: int, end: int) -> list[Span]:
    """Sentences of ``text[start:end]`` by sentencex, trimmed of surrounding whitespace (the bare segmentation)."""
    out = []
    for b in sentencex.get_sentence_boundaries(LANGUAGE, text[start:end]):
        span = _trim(text, start + b["start_index"], start + b["end_index"])
        if span[1] > span[0]:
            out.append(span)
    return out


# -- lines ---------------------------------------------------------------------------


def _lines(text: str, start: int, end: int) -> Iterator[_Line]:
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl < 0 else nl
        yield _Line(pos, stop, text[pos:stop])
        pos = stop + 1


def _region(text: str, start: int, end: int) -> Iterator[tuple[Span, ...]]:
    """Every statement's spans in ``text[start:end]``."""
    subject: Span | None = None
    lead_in: Span | None = None  # a line ending with ':' that introduces a list
    para: list[_Line] = []
    in_fence = False
    first = True
    last_subject: list[Span | None] = [None]

    def flush() -> Iterator[tuple[Span, ...]]:
        if para:
            yield from _prose(text, para[0].start, para[-1].end, subject, last_subject)
            para.clear()

    for line in _lines(text, start, end):
        stripped = line.text.strip()
        if FENCE.match(line.text):
            yield from flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if not stripped:
            yield from flush()
            lead_in = None
            continue
        if MARKUP.match(line.text):
            if UNDERLINE.match(line.text) and para:
                para.pop()  # a setext heading's text: not a statement
            yield from flush()
            lead_in = None
            first = False
            continue
        span = _trim(text, line.start, line.end)
        if first:
            first = False
            title = _title_subject(text, span)
            if title is not None:
                subject = title
                yield (span,)
                continue
        item = LIST_ITEM.match(line.text)
        if item:
            yield from flush()
            body = _trim(text, line.start + item.end(), line.end)
            if _words(text, body) >= 2 or lead_in is not None:
                yield from _clauses(text, body, lead_in, subject, last_subject)
            continue
        label = LABEL_LINE.match(line.text)
        if label and not para:
            value = line.start + label.end()
            if value >= line.end:  # "Summary:" alone introduces what follows
                lead_in = span
                continue
            yield from _label_line(text, span, value, subject)
            continue
        if stripped.endswith(":") and not para:
            lead_in = span
            continue
        para.append(line)
    yield from flush()


def _title_subject(text: str, span: Span) -> Span | None:
    """The subject a record's title line names, or None when the line is no title."""
    s, e = span
    line = text[s:e]
    if len(line) > MAX_TITLE_CHARS or SENTENCE_END.search(line):
        return None
    colon = line.find(": ")
    dash = line.find(" — ")
    if 0 < colon <= MAX_SUBJECT_CHARS:
        return _trim(text, s, s + colon)
    if dash > 0:
        return _trim(text, s, s + min(dash, MAX_SUBJECT_CHARS))
    return None


def _label_line(text: str, span: Span, value: int, subject: Span | None) -> Iterator[tuple[Span, ...]]:
    """``Label: a; b`` -> ``[subject] Label: a`` and ``[subject] b``."""
    s, e = span
    prefix = (subject,) if subject is not None else ()
    items = _split_at(text, value, e, ITEM_CUT)
    first_end = items[0][1] if items else e
    yield (*prefix, (s, first_end))
    for item in items[1:]:
        yield (*prefix, item)


# -- prose ---------------------------------------------------------------------------


def _prose(
    text: str, start: int, end: int, section_subject: Span | None, last_subject: list[Span | None]
) -> Iterator[tuple[Span, ...]]:
    """A paragraph's statements; its first sentence may take the chunk's subject, later ones the previous sentence's."""
    last_subject[0] = None
    for i, sent in enumerate(sentence_spans(text, start, end)):
        if i:
            section_subject = None
        if _words(text, sent) < 2:
            continue
        yield from _clauses(text, sent, None, section_subject, last_subject)


def _clauses(
    text: str, sent: Span, lead_in: Span | None, section_subject: Span | None, last_subject: list[Span | None]
) -> Iterator[tuple[Span, ...]]:
    """One sentence (or list item) as coordinated clauses / verb phrases, pronouns resolved."""
    parts = _coordinated(text, sent)
    sentence_subject = _subject(text, parts[0][0]) if parts else None
    for span, shared in parts:
        pieces: tuple[Span, ...] = (span,)
        if shared is not None:
            pieces = (shared, span)
        else:
            resolved = _resolve_pronoun(text, span, last_subject[0] or section_subject)
            if resolved is not None:
                pieces = resolved
        if lead_in is not None:
            pieces = (lead_in, *pieces)
        yield pieces
    # only the sentence just read may lend its subject: an older one is ambiguous
    last_subject[0] = None if sentence_subject is None or _is_pronoun(text, sentence_subject) else sentence_subject


def _coordinated(text: str, sent: Span) -> list[tuple[Span, Span | None]]:
    """``[(span, shared subject or None)]``: the sentence cut at coordinations that have a verb of their own.

    A cut before a verb phrase (``… a permit and must be …``) hands the left clause's
    subject to the right part; a cut before an independent clause (``; …``,
    ``, and the permit was …``) starts afresh. A plain `` and `` (no comma) only ever
    joins verb phrases here: between noun phrases it is a list, not two statements.
    """
    s, e = sent
    parts: list[tuple[Span, Span | None]] = []
    cur, shared = s, None
    for m in CLAUSE_CUT.finditer(text, s, e):
        left = _trim(text, cur, m.start())
        if _words(text, left) < 2:
            continue
        words = _clause_head(text, m.end(), e)
        if not words:
            continue
        if _bare(words[0]).lower() in AUX | COMMON_VERBS:  # "... and must be", "..., and uses"
            subject = shared or _subject(text, left)
            if subject is None or _is_pronoun(text, subject):
                continue
            parts.append((left, shared))
            cur, shared = m.end(), subject
        elif m.group().strip() != "and" and m.group().strip() != "but" and (
            m.group().lstrip().startswith(";") or _independent(words)
        ):
            parts.append((left, shared))
            cur, shared = m.end(), None
    parts.append((_trim(text, cur, e), shared))
    return [(span, sh) for span, sh in parts if span[1] > span[0]]


def _clause_head(text: str, start: int, end: int) -> list[str]:
    """The first words after a cut, up to the first one closing on punctuation (a list item ends there)."""
    out = []
    for w in WORD.finditer(text, start, min(end, start + 160)):
        out.append(w.group())
        if len(out) >= MAX_SUBJECT_WORDS or w.group().endswith((",", ";", ":")):
            break
    return out


def _is_verb(word: str) -> bool:
    w = _bare(word).lower()
    return w in AUX or w in COMMON_VERBS or (len(w) > 4 and w.endswith("ed"))


def _subject(text: str, span: Span) -> Span | None:
    """The words before a clause's first verb, when they look like a subject (1..8 words, no comma, no preposition first)."""
    words = list(WORD.finditer(text, span[0], span[1]))
    for i, w in enumerate(words[: MAX_SUBJECT_WORDS + 1]):
        if i and _is_verb(w.group()):
            head = words[:i]
            if _bare(head[0].group()).lower() in NOT_SUBJECT_START:
                return None
            if any(x.group().endswith((",", ";", ":")) for x in head):
                return None
            return head[0].start(), head[-1].end()
    return None


def _independent(words: list[str]) -> bool:
    """Do these words open a clause with its own subject and verb?"""
    first = _bare(words[0])
    if not first or first.lower() in NOT_SUBJECT_START:
        return False
    if not (first.lower() in DETERMINERS or first.lower() in PRONOUNS_SINGULAR | PRONOUNS_PLURAL | PRONOUNS_PERSON
            or first[0].isupper() or first[0].isdigit()):
        return False
    return any(_is_verb(w) for w in words[1:])


def _resolve_pronoun(text: str, span: Span, candidate: Span | None) -> tuple[Span, Span] | None:
    """``(candidate, rest)`` when ``span`` opens with a subject pronoun that ``candidate`` agrees with."""
    if candidate is None:
        return None
    words = list(WORD.finditer(text, span[0], min(span[1], span[0] + 120)))
    if len(words) < 2:
        return None
    pronoun = _bare(words[0].group()).lower()
    if pronoun in ("this", "these") and not _is_verb(words[1].group()):
        return None  # "This page takes…": a determiner, not a pronoun
    cand = text[candidate[0]:candidate[1]]
    person = PERSON_TITLE.match(cand) is not None
    if pronoun in PRONOUNS_SINGULAR:
        ok = not person and not _plural(cand)
    elif pronoun in PRONOUNS_PLURAL:
        ok = not person and _plural(cand)
    elif pronoun in PRONOUNS_PERSON:
        ok = person
    else:
        return None
    if not ok:
        return None
    return candidate, (words[1].start(), span[1])


def _plural(phrase: str) -> bool:
    words = phrase.split()
    if " and " in f" {phrase} ":
        return True
    last = _bare(words[-1]).lower() if words else ""
    return last.endswith("s") and not last.endswith(("ss", "us", "is")) and last.isalpha()


def _is_pronoun(text: str, span: Span) -> bool:
    return text[span[0]:span[1]].lower() in PRONOUNS_SINGULAR | PRONOUNS_PLURAL | PRONOUNS_PERSON | {"we", "you", "i"}


# -- small helpers -------------------------------------------------------------------


def _bare(word: str) -> str:
    return word.strip(".,;:!?()[]{}\"'`*_")


def _words(text: str, span: Span) -> int:
    return sum(1 for w in WORD.finditer(text, span[0], span[1]) if any(c.isalnum() for c in w.group()))


def _trim(text: str, start: int, end: int) -> Span:
    """``[start, end)`` without surrounding whitespace, or a trailing comma."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and (text[end - 1].isspace() or text[end - 1] == ","):
        end -= 1
    return start, end


def _split_at(text: str, start: int, end: int, sep: re.Pattern[str]) -> list[Span]:
    out, cur = [], start
    for m in sep.finditer(text, start, end):
        span = _trim(text, cur, m.start())
        if span[1] > span[0]:
            out.append(span)
        cur = m.end()
    span = _trim(text, cur, end)
    if span[1] > span[0]:
        out.append(span)
    return out
