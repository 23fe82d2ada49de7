"""Where a message quotes, and what it repeats: the rules behind a thread's rendering.

A reply carries the text it answers in one of three common styles, and the
rendering (:func:`codex_pipeline.sources.email.threads.dedup_quotes`) replaces every
quoted run that repeats an earlier message of the thread by one reference line:

* ``>``-prefixed lines (any depth: ``> >``, ``>>``);
* an **Outlook block**: ``-----Original Message-----`` and/or a run of at least two
  header lines (``From:``, ``Sent:``, ``To:``, ``Cc:``, ``Subject:``, ``Date:``) opening
  with ``From:`` or the separator, then the earlier message unprefixed, to the end of
  the body. The header lines are folded into the reference when what follows is
  referenced; lines of the block that repeat nothing stay verbatim;
* an **attribution line** ("On Mon, 3 Apr 2017, Victor wrote:", "In article <…>, X
  wrote:", "Le … a écrit :", "Am … schrieb …:") in front of a ``>`` run: dropped when the
  run's first line became a reference (the reference names author and date).

Then **repeated blocks**: a paragraph (a run of non-blank lines; a signature
delimiter ``--`` starts one) of at least :data:`MIN_REPEAT_CHARS` that already
appeared in an earlier message of the thread — a signature, a company disclaimer, the
list footer quoted again and again — becomes ``[repeated from message k: N lines]``.
The first occurrence stays verbatim, so nothing is lost; every reference names where
the text is.

Why these rules and not a library: ``mail-parser-reply`` (and the older
``email-reply-parser`` / ``talon``) answer "what is the latest reply", as strings of
line-stripped text: no offsets into the body (the thread rendering must map every kept
line back to the file), and their signature rule cuts everything after "Thanks," or a
``- item`` line, which drops content. Here a line is only ever replaced when it is
found in an earlier message of the same thread.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MIN_REPEAT_CHARS = 40  # shorter paragraphs ("Cheers,\nNick.") are cheaper verbatim than as a reference
OUTLOOK_SEPARATOR = re.compile(r"^[ \t]*-{3,}[ \t]*(?:Original Message|Forwarded message|Ursprüngliche Nachricht)"
                               r"[ \t]*-{3,}[ \t]*$", re.I)
OUTLOOK_HEADER = re.compile(r"^[ \t]*\*?(?:From|Sent|To|Cc|Subject|Date)\*?:[ \t*]", re.I)
OUTLOOK_FROM = re.compile(r"^[ \t]*\*?From\*?:[ \t*]", re.I)
ATTRIBUTION_END = re.compile(r"(?:\bwrote|\bwrites|\bsaid|a écrit|schrieb|escribió|scrisse)[^\n]{0,12}:[ \t]*$", re.I)
ATTRIBUTION_START = re.compile(r"^[ \t]*(?:On|Le|Am|El|Il|Quoting|In article|In message)\b", re.I)
SIGNATURE_DELIMITER = re.compile(r"^--[ \t]*$")
_QUOTE = re.compile(r"^[ \t]*>")


def outlook_start(lines: Sequence[str], start: int = 0) -> int | None:
    """Index of the first line at or after ``start`` opening an Outlook-style block (separator or header run).

    A header run is at least two consecutive header lines opening with ``From:``, not
    ``>``-quoted: "From: x" alone in prose is not a block.
    """
    for i in range(start, len(lines)):
        line = lines[i]
        if OUTLOOK_SEPARATOR.match(line):
            return i
        if OUTLOOK_FROM.match(line) and i + 1 < len(lines) and OUTLOOK_HEADER.match(lines[i + 1]):
            return i
    return None


def outlook_header_end(lines: Sequence[str], start: int) -> int:
    """Past the Outlook block's separator and header lines (and a blank line after them)."""
    i = start + 1 if OUTLOOK_SEPARATOR.match(lines[start]) else start
    while i < len(lines) and OUTLOOK_HEADER.match(lines[i]):
        i += 1
    if i < len(lines) and not lines[i].strip():
        i += 1
    return i


def quoted_lines(lines: Sequence[str]) -> tuple[list[bool], dict[int, int]]:
    """Which lines are quoted, and each Outlook header run (first line after it → its first line).

    ``>`` lines are quoted; so is every line after the first Outlook block's header,
    to the end of the body (older messages nested in it included, their header runs
    listed too, so each can be folded into the reference that follows it).
    """
    quoted = [bool(_QUOTE.match(line)) for line in lines]
    fold: dict[int, int] = {}
    start = outlook_start(lines)
    first_body: int | None = None
    while start is not None:
        body = outlook_header_end(lines, start)
        fold[body] = start
        first_body = body if first_body is None else first_body
        start = outlook_start(lines, max(body, start + 1))
    if first_body is not None:
        for k in range(first_body, len(lines)):
            quoted[k] = True
    return quoted, fold


def attribution_lines(out: Sequence[str]) -> int:
    """How many of the last lines of ``out`` are an attribution ("On …, X wrote:"), 0 to 2."""
    if not out or not ATTRIBUTION_END.search(out[-1]):
        return 0
    if ATTRIBUTION_START.match(out[-1]) or len(out) < 2 or not out[-2].strip():
        return 1
    return 2 if ATTRIBUTION_START.match(out[-2]) else 1


def paragraphs(lines: Sequence[str]) -> list[tuple[int, int]]:
    """``[start, end)`` line ranges of the runs of non-blank lines; a signature delimiter starts a new one."""
    out: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(lines):
        if not line.strip():
            if start is not None:
                out.append((start, i))
                start = None
            continue
        if start is not None and SIGNATURE_DELIMITER.match(line):
            out.append((start, i))
            start = None
        if start is None:
            start = i
    if start is not None:
        out.append((start, len(lines)))
    return out
