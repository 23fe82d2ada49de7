"""Where a document's canonical text came from: canonical offsets → (source file, file offsets).

Hits cite ranges of a document's canonical text; gold references cite ranges of the
source files. A :class:`SourceMap` is a list of segments, each a stretch of canonical
text that is a verbatim copy of a stretch of one file, so the mapping is exact
wherever it maps at all:

* **identity** — the canonical text is the file as read (council transcripts,
  Markdown, plain text): one segment covering the whole document.
* **email threads** — the canonical text is a thread rendering (summary, a header per
  message, bodies with repeated quotes replaced by ``[quoting …]`` lines). Every body
  line is found in its message's stretch of the mbox/.eml file (the message's
  ``record_ref`` line onwards, in order) and mapped character for character. Template
  text — the thread summary, the rendered ``From:/Date:/Subject:`` header lines and
  quote references — has no verbatim source and maps to nothing (it adds nothing to
  the retrieved characters); so does a line the reader decoded (quoted-printable,
  base64, an mboxrd ``>From`` escape), since the file holds its encoded form.
* **anything else** whose text differs from its file: the same in-order line search
  over the whole file.

:attr:`SourceMap.coverage` reports how much of the canonical text mapped.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from codex_pipeline.core.documents import SourceDocument

_MBOX_SEPARATOR = re.compile(r"^From \S", re.M)
_RECORD_LINE = re.compile(r"\bline (\d+)\b")


@dataclass
class SourceMap:
    """Segments ``(canon_start, canon_end, file, file_start)``, sorted, non-overlapping."""

    segments: list[tuple[int, int, str, int]] = field(default_factory=list)
    length: int = 0  # of the canonical text

    def __post_init__(self) -> None:
        self.segments.sort()
        self._starts = [s[0] for s in self.segments]

    @property
    def coverage(self) -> float:
        """The share of the canonical text that maps to a file (1.0 for an empty text)."""
        return sum(e - s for s, e, _, _ in self.segments) / self.length if self.length else 1.0

    def map(self, spans: Iterable[tuple[int, int]]) -> dict[str, list[tuple[int, int]]]:
        """File ranges covered by canonical ``spans`` (unmapped stretches dropped)."""
        out: dict[str, list[tuple[int, int]]] = {}
        for s, e in spans:
            i = max(bisect.bisect_right(self._starts, s) - 1, 0)
            while i < len(self.segments) and self.segments[i][0] < e:
                c0, c1, file, f0 = self.segments[i]
                lo, hi = max(s, c0), min(e, c1)
                if hi > lo:
                    out.setdefault(file, []).append((f0 + lo - c0, f0 + hi - c0))
                i += 1
        return out


def build_source_map(doc: SourceDocument, files: Mapping[str, str], prefix: str = "") -> SourceMap:
    """The map of one document; ``files`` holds every source file's text by its corpus-relative path.

    ``prefix`` is the folder (relative to the corpus) the dataset's landing day was
    copied from, so ``doc.source_file`` + prefix is the gold ``source``.
    """
    messages = (doc.payload or {}).get("messages")
    if isinstance(messages, list) and messages and "header_span" in messages[0]:
        return _email_map(doc, messages, files, prefix)
    key = _key(prefix, doc.source_file)
    file_text = files.get(key)
    if file_text is None:
        return SourceMap([], len(doc.text))
    if file_text == doc.text:
        return SourceMap([(0, len(doc.text), key, 0)], len(doc.text))
    return SourceMap(list(_line_segments(doc.text, 0, len(doc.text), file_text, 0, len(file_text), key)), len(doc.text))


def _key(prefix: str, rel: str) -> str:
    return f"{prefix.strip('/')}/{rel}" if prefix.strip("/") else rel


def _email_map(doc: SourceDocument, messages: Sequence[Mapping[str, Any]], files: Mapping[str, str],
               prefix: str) -> SourceMap:
    segments: list[tuple[int, int, str, int]] = []
    starts: dict[str, list[int]] = {}
    for m in messages:
        key = _key(prefix, str(m.get("source_file", "")))
        file_text = files.get(key)
        if file_text is None:
            continue
        if key not in starts:
            starts[key] = _line_starts(file_text)
        lo, hi = _message_region(file_text, starts[key], str(m.get("record_ref") or ""))
        body_start, body_end = int(m["header_span"][1]), int(m["span"][1])
        segments += _line_segments(doc.text, body_start, body_end, file_text, lo, hi, key)
    return SourceMap(segments, len(doc.text))


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _message_region(file_text: str, line_starts: list[int], record_ref: str) -> tuple[int, int]:
    """The file stretch of one message: from its separator line to the next one (the whole file for .eml)."""
    m = _RECORD_LINE.search(record_ref)
    if not m:
        return 0, len(file_text)
    line = int(m.group(1))
    lo = line_starts[min(line, len(line_starts)) - 1]
    nxt = _MBOX_SEPARATOR.search(file_text, lo + 1)
    return lo, nxt.start() if nxt else len(file_text)


def _line_segments(canon: str, c_lo: int, c_hi: int, file_text: str, f_lo: int, f_hi: int,
                   key: str) -> Iterable[tuple[int, int, str, int]]:
    """Each non-blank line of ``canon[c_lo:c_hi]`` found, in order, in ``file_text[f_lo:f_hi]``.

    Lines that follow each other in both texts, with the same newlines (and blank lines)
    between them, are one segment, so a passage of several lines or paragraphs maps whole
    (a gold span over it can be fully recalled).
    """
    cursor = f_lo
    pos = c_lo
    run: tuple[int, int, str, int] | None = None
    while pos < c_hi:
        nl = canon.find("\n", pos, c_hi)
        end = c_hi if nl < 0 else nl
        line = canon[pos:end]
        if line.strip():
            at = file_text.find(line, cursor, f_hi)
            if at >= 0:
                if run and _same_gap(canon[run[1]:pos], file_text[run[3] + run[1] - run[0]:at]):
                    run = (run[0], end, key, run[3])
                else:
                    if run:
                        yield run
                    run = (pos, end, key, at)
                cursor = at + len(line)
        pos = end + 1
    if run:
        yield run


def _same_gap(canon_gap: str, file_gap: str) -> bool:
    """Two mapped lines are contiguous in both texts: the same whitespace-only stretch between them."""
    return canon_gap == file_gap and "\n" in canon_gap and not canon_gap.strip()
