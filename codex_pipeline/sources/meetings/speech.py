"""Council transcripts without speaker labels, cut into sentence-bounded segments (issue 41).

Two shapes of speech text come without speakers:

* ``captions``: closed captions, one short caption per line, lines breaking mid-sentence,
  with a bare ``[HH:MM:SS]`` line every few minutes;
* ``one_line``: a Whisper-style transcript, the whole meeting on one line (sometimes
  with no punctuation at all for long stretches).

The file text is the document's canonical text: everything here is char offsets into it,
never a normalized copy. Sentences come from ``sentencex`` (the segmenter the project
already uses) run on a same-length view of the text in which line breaks are spaces, so a
caption line break is never a sentence end and offsets need no mapping back; a
``[HH:MM:SS]`` line is a hard boundary and belongs to no sentence.

Segments are what the chunker turns into chunks, so they are retrieval units: whole
consecutive sentences of ``min_tokens``..``max_tokens`` cl100k tokens. The defaults (150 and
600) were chosen leave-one-corpus-out among 60-230, 100-400, 150-600 and 200-800 on the two
transcript folds there are (the Huntsville captions and Whisper transcripts with their agendas,
``eval/README.md``, issue 41): 60-230, sized to embed whole in MiniLM's 254 wordpieces, lost 5
to 10 points of recall to every larger size (a spoken answer runs over several short sentences,
and five small hits cover little of a 90-minute meeting); 150-600 was best on the two folds
together. A sentence alone over ``max_tokens`` (Whisper run-ons: one "sentence" of
10,000 tokens) is cut into nearly equal pieces at word boundaries, preferring a cut after a
comma, semicolon or colon; a single "word" longer than that is cut between tokens.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import dataclass

import numpy as np
import sentencex

from codex_pipeline.core.splitting import trim
from codex_pipeline.core.tokens import count_tokens_batch, encoding

LANGUAGE = "en"
#: Default segment bounds in cl100k tokens (why: the module docstring).
MIN_TOKENS = 150
MAX_TOKENS = 600
#: The smallest ``max_tokens`` accepted: any single character must fit in a segment.
SMALLEST_MAX_TOKENS = 8

CAPTIONS = "captions"
ONE_LINE = "one_line"

# A bare clock line; group 1 is the mark as written.
_CLOCK_LINE = re.compile(r"^[ \t]*\[(\d{1,2}:\d{2}:\d{2})\][ \t\r]*$", re.M)
# Line breaks become spaces in the view sentencex reads (same length: offsets carry over).
_BREAKS_TO_SPACES = str.maketrans({c: " " for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})
_SPACE_RUN = re.compile(r"\s+")
_CLAUSE_END = frozenset(",;:")
# Token counts are estimated from one encoding of the whole text; an estimate this close to
# a bound is replaced by an exact count, and every segment is counted exactly at the end.
_GUARD = 3


@dataclass(frozen=True)
class Segment:
    """Consecutive whole sentences (or one piece of a sentence over ``max_tokens``): ``text[start:end]``."""

    start: int  # first char of the segment's first sentence
    end: int  # end of its last sentence (exclusive)
    clock: str | None  # the last [HH:MM:SS] mark at or before start, as written ("00:05:12"); None before the first
    clock_offset: int | None  # char offset of that mark's digits in the file (the evidence anchor)
    sentences: int  # sentences it holds; a piece of a cut sentence counts 1
    tokens: int  # exact cl100k count of text[start:end]


@dataclass(frozen=True)
class _Clock:
    line_start: int
    line_end: int
    clock: str
    offset: int


# ---------------------------------------------------------------------------- style

_DIARIZED = re.compile(r"^[ \t]*(?:Start|End|Duration|Text):", re.M)
# "MAYOR SMITH: …", ">> Council Member Lee: …", "Speaker 1: …" at a line start
_SPEAKER_LABEL = re.compile(r"^[ \t]*(?:>>\s*)?[A-Z][A-Za-z0-9 .'-]{0,40}:(?:\s|$)")
# agenda and document structure: "1.", "A)", "IV.", bullets, "Page 2 of 9", ALL-CAPS headings
_STRUCTURED = re.compile(
    r"^[ \t]*(?:\d{1,3}(?:\.\d{1,3})*[.)]\s|[A-Za-z][.)]\s|[IVXLC]{1,6}\.\s|[-*•▪◦]\s|#|Page \d+ of \d+)"
    r"|^[ \t]*[^a-z\n]*[A-Z]{3}[^a-z\n]*$"
)


def transcript_style(text: str) -> str | None:
    """``"captions"``, ``"one_line"`` or None: whether this module's segmentation suits the text.

    captions: at least 8 short lines (median at most 60 chars, 90th percentile at most
    100) that are neither evenly filled to a wrap width (hard-wrapped prose) nor agenda
    structure (numbering, bullets, ALL-CAPS headings); ``[HH:MM:SS]`` lines are ignored.
    one_line: at most 5 non-blank lines, the longest 1,000+ chars holding 80% of the
    text. None: anything else, and any text with diarized ``Start:``/``Text:`` blocks or
    speaker labels on a fifth of its lines (those have their own parser).
    """
    if len(_DIARIZED.findall(text, 0, 200_000)) >= 2:
        return None
    lines = [ln for ln in text.splitlines() if ln.strip() and not _CLOCK_LINE.fullmatch(ln)]
    if not lines:
        return None
    if sum(1 for ln in lines if _SPEAKER_LABEL.match(ln)) * 5 >= len(lines) and len(lines) > 1:
        return None
    lengths = sorted(len(ln.strip()) for ln in lines)
    longest = lengths[-1]
    if len(lines) <= 5 and longest >= 1000 and longest >= 0.8 * sum(lengths):
        return ONE_LINE
    if len(lines) < 8:
        return None
    median, p90 = lengths[len(lengths) // 2], lengths[int(0.9 * (len(lengths) - 1))]
    if median > 60 or p90 > 100:
        return None
    filled = sum(1 for n in lengths if n >= 0.8 * p90)
    structured = sum(1 for ln in lines if _STRUCTURED.match(ln))
    if filled > 0.6 * len(lines) or structured > 0.1 * len(lines):
        return None
    return CAPTIONS


# ---------------------------------------------------------------------------- sentences


def clock_marks(text: str) -> list[tuple[int, str]]:
    """The ``[HH:MM:SS]`` lines of ``text``: (offset of the mark's digits, the mark as written)."""
    return [(c.offset, c.clock) for c in _clocks(text)]


def sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans over the file text: caption line breaks are not sentence ends; timestamp lines are skipped.

    The spans partition the text outside timestamp lines up to whitespace: every
    non-whitespace char outside those lines is in exactly one span (sentencex only
    decides where one sentence ends and the next begins).
    """
    view = text.translate(_BREAKS_TO_SPACES)
    out: list[tuple[int, int]] = []
    for a, b in _blocks(text, _clocks(text)):
        out.extend(_sentences_in(text, view, a, b))
    return out


def _clocks(text: str) -> list[_Clock]:
    if "[" not in text:
        return []
    return [_Clock(m.start(), m.end(), m.group(1), m.start(1)) for m in _CLOCK_LINE.finditer(text)]


def _blocks(text: str, clocks: list[_Clock]) -> list[tuple[int, int]]:
    """The stretches between timestamp lines (the first before any mark, possibly empty)."""
    out, pos = [], 0
    for c in clocks:
        out.append((pos, c.line_start))
        pos = c.line_end
    out.append((pos, len(text)))
    return out


def _sentences_in(text: str, view: str, a: int, b: int) -> list[tuple[int, int]]:
    chunk = view[a:b]
    if not chunk.strip():
        return []
    cuts = sorted({a + bd["end_index"] for bd in sentencex.get_sentence_boundaries(LANGUAGE, chunk)} | {b})
    out, prev = [], a
    for cut in cuts:
        cut = min(max(cut, prev), b)
        s, e = trim(text, prev, cut)
        if e > s:
            out.append((s, e))
        prev = cut
    return out


# ---------------------------------------------------------------------------- tokens


class _Tokens:
    """Token estimates from one cl100k encoding of the whole text (exact counts are taken apart)."""

    def __init__(self, text: str) -> None:
        enc = encoding()
        ids = enc.encode_ordinary(text)
        lengths = np.fromiter((len(b) for b in enc.decode_tokens_bytes(ids)), dtype=np.int64, count=len(ids))
        starts = np.zeros(len(ids), dtype=np.int64)
        if len(ids) > 1:
            np.cumsum(lengths[:-1], out=starts[1:])
        if not text.isascii():  # byte offsets -> offsets of the chars holding them
            data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
            char_of_byte = np.cumsum((data & 0xC0) != 0x80) - 1
            starts = char_of_byte[starts] if len(starts) else starts
        self.starts = starts

    def before(self, positions: np.ndarray) -> np.ndarray:
        """Tokens that start before each position (a token straddling it counts: used for ends)."""
        out: np.ndarray = np.searchsorted(self.starts, positions, side="left")
        return out

    def through(self, positions: np.ndarray) -> np.ndarray:
        """Tokens wholly before each position (a token straddling it does not: used for starts)."""
        k = np.searchsorted(self.starts, positions, side="left")
        on_start = (k < len(self.starts)) & (self.starts[np.minimum(k, max(len(self.starts) - 1, 0))] == positions)
        out: np.ndarray = np.where(on_start | (k == 0), k, k - 1)
        return out


# ---------------------------------------------------------------------------- segments


def segments(text: str, *, min_tokens: int = MIN_TOKENS, max_tokens: int = MAX_TOKENS,
             sentence_spans: list[tuple[int, int]] | None = None) -> list[Segment]:
    """Consecutive sentences packed into segments; every non-blank char outside timestamp lines lies in exactly one segment.

    Segments never cross a ``[HH:MM:SS]`` line (its text would be in the chunk). Between
    two marks the sentences are packed by dynamic programming, lexicographically
    minimizing: segments under ``min_tokens``, then the number of segments, then the sum
    of squared sizes (so sizes even out instead of leaving a short tail). A segment under
    ``min_tokens`` therefore only occurs when neither neighbour between the same marks
    could take it within ``max_tokens``: the stretch before a mark (or the file's end)
    is that short, or it sits between two nearly full segments. ``sentence_spans``:
    :func:`sentences` of ``text`` when the caller has them already (the segmenter is the costly part).
    """
    if max_tokens < SMALLEST_MAX_TOKENS or not 0 <= min_tokens <= max_tokens:
        raise ValueError(f"need 0 <= min_tokens <= max_tokens and max_tokens >= {SMALLEST_MAX_TOKENS}, "
                         f"got {min_tokens}, {max_tokens}")
    clocks = _clocks(text)
    blocks = _blocks(text, clocks)
    if sentence_spans is None:
        view = text.translate(_BREAKS_TO_SPACES)
        per_block = [_sentences_in(text, view, a, b) for a, b in blocks]
    else:  # the same spans, grouped by the stretch between timestamp lines they lie in
        per_block = [[] for _ in blocks]
        block_starts = [a for a, _ in blocks]
        for s, e in sentence_spans:
            per_block[bisect_right(block_starts, s) - 1].append((s, e))
    flat = [s for block in per_block for s in block]
    if not flat:
        return []
    tok = _Tokens(text)
    exact = count_tokens_batch([text[s:e] for s, e in flat])
    out: list[Segment] = []
    k = 0
    for b, block in enumerate(per_block):
        units: list[tuple[int, int]] = []
        counts: list[int] = []
        owner: list[int] = []  # sentence number of each unit
        for s, e in block:
            n = exact[k]
            if n <= max_tokens:
                units.append((s, e))
                counts.append(n)
                owner.append(k)
            else:
                for piece, m in _cut_sentence(text, s, e, tok, max_tokens):
                    units.append(piece)
                    counts.append(m)
                    owner.append(k)
            k += 1
        if not units:
            continue
        clock = clocks[b - 1] if b > 0 else None
        for (j, i), n in _pack(text, units, counts, tok, min_tokens, max_tokens):
            out.append(Segment(units[j][0], units[i][1], clock.clock if clock else None,
                               clock.offset if clock else None, owner[i] - owner[j] + 1, n))
    return out


def _pack(text: str, units: list[tuple[int, int]], counts: list[int], tok: _Tokens,
          min_tokens: int, max_tokens: int) -> list[tuple[tuple[int, int], int]]:
    """Groups (first, last unit, inclusive) of one stretch between marks, with their exact token counts."""
    m = len(units)
    first = tok.through(np.array([s for s, _ in units], dtype=np.int64)).tolist()
    last = tok.before(np.array([e for _, e in units], dtype=np.int64)).tolist()
    exact: dict[tuple[int, int], int] = {(i, i): n for i, n in enumerate(counts)}

    def size(j: int, i: int) -> int:
        if (j, i) in exact:
            return exact[(j, i)]
        est = last[i] - first[j]
        if abs(est - max_tokens) <= _GUARD or abs(est - min_tokens) <= _GUARD:
            exact[(j, i)] = count_tokens_batch([text[units[j][0]:units[i][1]]])[0]
            return exact[(j, i)]
        return est

    while True:
        best: list[tuple[int, int, int]] = [(0, 0, 0)]
        back = [0]
        for i in range(m):
            choice: tuple[int, int, int] | None = None
            at = i
            for j in range(i, -1, -1):
                if j < i and last[i] - first[j] > max_tokens + _GUARD:
                    break
                n = size(j, i)
                if n > max_tokens:
                    continue
                under, count, squares = best[j]
                cand = (under + (n < min_tokens), count + 1, squares + n * n)
                if choice is None or cand < choice:
                    choice, at = cand, j
            assert choice is not None  # a unit alone always fits: units are at most max_tokens
            best.append(choice)
            back.append(at)
        groups: list[tuple[int, int]] = []
        i = m
        while i > 0:
            groups.append((back[i], i - 1))
            i = back[i]
        groups.reverse()
        unknown = [g for g in groups if g not in exact]
        for g, n in zip(unknown, count_tokens_batch([text[units[g[0]][0]:units[g[1]][1]] for g in unknown])):
            exact[g] = n
        if all(exact[g] <= max_tokens for g in groups):  # estimates held: the usual case
            return [(g, exact[g]) for g in groups]
        # else a group over max_tokens now has its exact count in ``exact``: pack again without it


def _cut_sentence(text: str, s: int, e: int, tok: _Tokens, max_tokens: int) -> list[tuple[tuple[int, int], int]]:
    """A sentence over ``max_tokens`` cut into nearly equal pieces at word boundaries, with exact counts.

    Pieces aim at ``total / ceil(total / limit)`` tokens; a cut after ``,`` ``;`` ``:``
    counts as a tenth of ``max_tokens`` closer to that aim, and a cut just before a chair's
    announcement (:data:`ANNOUNCEMENT_PATTERNS`: unpunctuated Whisper text reads the agenda
    inside one "sentence") as a quarter, so pieces tend to start where an item does. A
    stretch with no whitespace within the limit (one giant "word") is cut between tokens.
    """
    limit = max(max_tokens - _GUARD, max_tokens // 2, 1)
    runs = [(r.start(), r.end()) for r in _SPACE_RUN.finditer(text, s, e)]
    announced = {m.start() for _, pattern in _ANNOUNCEMENTS for m in pattern.finditer(text, s, e)}
    run_tokens = tok.before(np.array([r[0] for r in runs], dtype=np.int64)).tolist() if runs else []
    run_starts = [r[0] for r in runs]
    end_tokens = int(tok.before(np.array([e]))[0])
    bonus = max_tokens / 10
    pieces: list[tuple[int, int]] = []
    cur = s
    while cur < e:
        base = int(tok.through(np.array([cur]))[0])
        remaining = end_tokens - base
        if remaining <= limit:
            pieces.append((cur, e))
            break
        left = math.ceil(remaining / limit)  # pieces still needed: a cut may not make it one more
        target, earliest = base + remaining / left, end_tokens - (left - 1) * limit
        best: tuple[float, int] | None = None
        for r in range(bisect_right(run_starts, cur), len(runs)):
            t = run_tokens[r]
            if t - base > limit:
                break
            if t <= base or t < earliest:
                continue
            score = abs(t - target) - (2.5 * bonus if runs[r][1] in announced
                                       else bonus if text[runs[r][0] - 1] in _CLAUSE_END else 0.0)
            if best is None or score < best[0]:
                best = (score, r)
        if best is None:  # no word boundary within the limit: cut between tokens
            index = base + limit
            cut = int(tok.starts[index]) if index < len(tok.starts) else e
            cut = min(max(cut, cur + 1), e)
            pieces.append((cur, cut))
            cur = cut
        else:
            ws, we = runs[best[1]]
            pieces.append((cur, ws))
            cur = we
    out: list[tuple[tuple[int, int], int]] = []
    trimmed = [p for p in (trim(text, a, b) for a, b in pieces) if p[1] > p[0]]
    for piece, n in zip(trimmed, count_tokens_batch([text[a:b] for a, b in trimmed])):
        out.extend([(piece, n)] if n <= max_tokens else _halve(text, piece[0], piece[1], max_tokens))
    return out


def _halve(text: str, s: int, e: int, max_tokens: int) -> list[tuple[tuple[int, int], int]]:
    """The fallback when an estimate failed: split at the whitespace nearest the middle (else the middle char)."""
    n = count_tokens_batch([text[s:e]])[0]
    if n <= max_tokens or e - s < 2:
        return [((s, e), n)]
    mid = (s + e) // 2
    runs = [(r.start(), r.end()) for r in _SPACE_RUN.finditer(text, s, e)]
    left_end, right_start = mid, mid
    if runs:
        ws, we = min(runs, key=lambda r: abs(r[0] - mid))
        left_end, right_start = ws, we
    out = []
    for a, b in ((s, left_end), (right_start, e)):
        a, b = trim(text, a, b)
        if b > a:
            out.extend(_halve(text, a, b, max_tokens))
    return out


# ---------------------------------------------------------------------------- announcements

_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
                 "sixteen|seventeen|eighteen|nineteen|twenty")
# An item reference as spoken without the word "item": 5, 5.1, 20-20, 7b, 9A, 14 a, 20-X, A-3, B.2.
_REF_BARE = r"(?:\d{1,3}(?:[.-]\d{1,3})*(?:(?!(?:st|nd|rd|th)\b)-?[a-z]{1,2}\b|\s[a-z]\b)?|[a-z]-?\d{1,3}(?:\.\d{1,3})*)(?![\w.-]*\d)"
# After "item" a number may also be a word: "item six a".
_REF = rf"(?:{_REF_BARE}|(?:{_NUMBER_WORDS})(?:\s[a-z]\b)?)\b"
_ITEM = rf"(?:agenda\s+)?items?\s+(?:number\s+|no\.\s*|\#\s*)?(?P<ref>{_REF})"
# What an agenda item is, as a clerk reads it: "9A is a public hearing on …"
_KIND = (r"(?:resolution|ordinance|(?:public\s+)?hearing|nomination|proclamation|presentation|introduction|minutes|"
         r"appointment|appeal|petition|contract|agreement|report|request|consent\s+(?:agenda|calendar))")
# Where a chair moves the meeting to: an item, or an agenda part ("public hearings", "new business items",
# "comments from the mayor", "the finance committee report", "the consent agenda").
_PART = (r"(?:[\w'-]+\s+){0,3}?(?:items?|agenda|calendar|hearings?|comments|business|reports?|minutes|"
         r"communications|resolutions|ordinances|presentations|nominations|appointments|proclamations|"
         r"recognitions|introductions?)\b")
_MOTION_VERB = r"(?:approve|adopt|amend|adjourn|postpone|table|accept|deny|reconsider|suspend|close|open|recess)\b"

#: How a presiding officer or clerk announces an agenda item, one pattern per way of saying it
#: (case-insensitive, matched anywhere in a sentence: Whisper run-ons hold several). ``ref`` (or
#: ``ref2``) captures the item reference as spoken; a pattern without one gives "".
ANNOUNCEMENT_PATTERNS: tuple[tuple[str, str], ...] = (
    # "Item 6A is a resolution …", "Item 19B is withdrawn.", "item number 5 will be …"
    ("item N is", rf"\b{_ITEM}\s*,?\s+(?:is|are|will\s+be)\b"),
    # the clerk reading the agenda: "9A is a public hearing on …", "21A is the introduction of an ordinance …"
    ("N is a resolution/ordinance/…",
     rf"(?<![\w.$#-])(?P<ref>{_REF_BARE})\s*,?\s+(?:is|are)\s+(?:(?:a|an|the)\s+)?{_KIND}\b"),
    # "the next item is 20 F", "The next item on the agenda is …", "next on the agenda"
    ("next item",
     rf"\bnext\s+(?:(?:agenda\s+)?item\b(?:\s+on\s+(?:the|our)\s+agenda)?(?:\s+(?:is|will\s+be)\s+"
     rf"(?:(?:agenda\s+)?item\s+(?:number\s+)?)?(?P<ref>{_REF}))?|on\s+(?:the|our|tonight's)\s+agenda\b)"),
    # "we'll move on to 9B", "That brings us to 19, unfinished business items", "moving on to the consent agenda";
    # not a motion ("we move to approve")
    ("move on to / brings us to",
     rf"\b(?:(?:we(?:'ll|\s+will|\s+shall)?|let's|I'll|I\s+will)\s+(?:now\s+)?"
     rf"(?:(?:move|go|turn|proceed|begin|start|come)(?:\s+(?:on|back|now))*\s+(?:to|with)|take\s+up)"
     rf"|moving\s+on\s+to|(?:brings|bring|takes)\s+us\s+(?:now\s+)?to)\s+(?!{_MOTION_VERB})(?:the\s+)?"
     rf"(?:{_ITEM}|(?P<ref2>{_REF_BARE})(?=[\s,.;:!?]|$)|{_PART})"),
    # "Madam Clerk, please read item 7", "the clerk will read the next item"
    ("the clerk reads",
     rf"\bclerk\b[^.?!]{{0,40}}?\bread\b(?:\s+(?:the\s+)?(?:next\s+)?(?:agenda\s+)?item\b"
     rf"(?:\s+(?:number\s+)?(?P<ref>{_REF}))?)?"),
    # "Next is the consent agenda", "we now have the consent calendar"
    ("consent agenda", r"\b(?:next|now)\b[^.?!]{0,20}?\bconsent\s+(?:agenda|calendar)\b"),
    # "the public hearing on item 9B is now open", "I'll open the public hearing for item 5"
    ("public hearing on item N", rf"\bpublic\s+hearing\s+(?:on|for)\s+{_ITEM}"),
)
_ANNOUNCEMENTS = [(name, re.compile(p, re.I)) for name, p in ANNOUNCEMENT_PATTERNS]
#: A pattern without a reference is dropped when one with a reference matched this close (chars)
#: in the same sentence: "we'll move on to the finance committee report. 14A is a resolution …".
NEARBY = 120


def chair_announcements(text: str, segs: list[Segment],
                        sentence_spans: list[tuple[int, int]] | None = None) -> list[tuple[int, str, int]]:
    """Sentences announcing an agenda item: (offset, item reference as spoken or "", index into ``segs``).

    The offset is the announcing sentence's start; in a sentence that ``segs`` cut into
    pieces (a run-on over ``max_tokens``: unpunctuated Whisper text reads the whole agenda
    in one "sentence") it is where the announcing words start, so it still points at the
    announcement and lies in the segment named. One sentence can give several rows; the
    same reference twice in one sentence gives one row, and a reference-less announcement
    close to one with a reference in the same sentence (:data:`NEARBY`) gives none.
    """
    if not segs:
        return []
    sents = sentences(text) if sentence_spans is None else sentence_spans
    sent_starts = [s for s, _ in sents]
    seg_starts = [g.start for g in segs]
    hits: list[tuple[int, int, int, int, str]] = []  # (segment, offset, match start, match end, ref)
    for _, pattern in _ANNOUNCEMENTS:
        for m in pattern.finditer(text):
            pos = m.start()
            g = bisect_right(seg_starts, pos) - 1
            k = bisect_right(sent_starts, pos) - 1
            if g < 0 or pos >= segs[g].end or k < 0 or pos >= sents[k][1]:
                continue
            groups = m.groupdict()
            ref = groups.get("ref") or groups.get("ref2") or ""
            hits.append((g, k, pos, m.end(), ref))
    hits.sort()
    out: list[tuple[int, str, int]] = []
    seen: set[tuple[int, int, str]] = set()
    for g, k, pos, _, ref in hits:
        key = (g, k, " ".join(ref.lower().replace("-", " ").split()))
        if key in seen or not ref and any(
                h[4] and h[0] == g and h[1] == k and h[2] - NEARBY <= pos <= h[3] + NEARBY for h in hits):
            continue
        seen.add(key)
        s, e = sents[k]
        out.append((s if segs[g].start <= s and e <= segs[g].end else pos, ref, g))
    return out
