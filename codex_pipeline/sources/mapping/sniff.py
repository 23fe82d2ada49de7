"""What ``codex sources init`` must know before it can look at columns: encoding, delimiter, header, a sample.

Only the head of the file is read (:data:`HEAD_BYTES`), so a file of any size drafts in
the same time. Encoding: a byte-order mark decides; else strict UTF-8; else NULs in
alternate bytes mean UTF-16 without a mark; else
cp1252 (the usual Windows export) when it reads every byte, else Latin-1. Delimiter:
each candidate parses the sample with :mod:`csv` and the one that gives a header of more than
one column and the same cell count on the most rows wins. Measured by ``bench/init_drafts.py``
on the three permit corpora and five odd files (semicolon Latin-1, UTF-16, a one-row semicolon
file …): it, :class:`csv.Sniffer` and DuckDB's ``sniff_csv`` agree on all eight; this one is
kept because it works on the decoded head (DuckDB reads the file itself, in fewer encodings)
and its rule is the reader's (same cell count as the header). A file that cannot be drafted raises :class:`Unreadable`: one line naming
the file and the fix.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from codex_pipeline.sources.csv_rows import unique_names

HEAD_BYTES = 4 << 20
"""Bytes read from the head of the file (the sample's rows come from them)."""
DELIMITERS = (",", ";", "\t", "|")
_DATA_CELL = re.compile(r"^$|^[+-]?[$]?[\d.,:/ -]+$")  # a number, date or empty: not a column name
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


class Unreadable(ValueError):
    """A file ``init`` cannot draft from: the message is one line naming the file and the fix."""


@dataclass
class Sample:
    """The head of a CSV export: how it is written and its first rows (dicts by header name)."""

    encoding: str
    delimiter: str
    header: list[str]
    rows: list[dict[str, str]]
    notes: list[str] = field(default_factory=list)  # what the sniffing was unsure of, for the draft's comments


def sniff_encoding(data: bytes) -> str:
    """The codec that reads ``data`` (the head of a file), as a mapping's ``encoding:`` value."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return enc
    head = data[:8192]
    if head.count(b"\x00") > len(head) // 8:
        odd, even = head[1::2].count(0), head[0::2].count(0)
        if odd > 3 * even:
            return "utf-16-le"
        if even > 3 * odd:
            return "utf-16-be"
        return "binary"
    try:
        data.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3:  # the head cut a character in two
            try:
                data[:exc.start].decode("utf-8")
                return "utf-8"
            except UnicodeDecodeError:
                pass
    return _single_byte(data)


def _single_byte(data: bytes) -> str:
    """cp1252 when it reads every byte (Windows exports), else Latin-1 (reads any byte).

    charset-normalizer was measured and not used: on a German Latin-1 export it answered
    cp1250, a Central European code page that reads the same bytes differently elsewhere.
    """
    try:
        data.decode("cp1252")
    except UnicodeDecodeError:
        return "latin-1"
    return "cp1252"


def _score(text: str, delimiter: str) -> tuple[float, int]:
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows or len(rows[0]) < 2:
        return (0.0, 0)
    width = len(rows[0])
    body = rows[1:-1] or rows[1:] or rows
    return (sum(len(r) == width for r in body) / len(body), width)


def sniff_delimiter(text: str) -> str:
    """The delimiter whose parse of ``text`` gives a header of 2+ columns and the most rows of its width."""
    head = text[: 1 << 18]
    head = head[: head.rfind("\n") + 1] or head
    best = max(DELIMITERS, key=lambda d: _score(head, d))
    return best if _score(head, best)[1] else ","


def read_sample(path: Path, sample: int, delimiter: str | None = None, encoding: str | None = None) -> Sample:
    """The header and first ``sample`` rows of the CSV at ``path``; :class:`Unreadable` when there are none."""
    try:
        with path.open("rb") as f:
            data = f.read(HEAD_BYTES)
            cut = bool(f.read(1))
    except OSError as exc:
        raise Unreadable(f"{path}: cannot read it ({exc.strerror or exc}); fix: check the path and its permissions") from None
    if not data.strip(b" \t\r\n\x00"):
        raise Unreadable(f"{path}: empty file (no header, no rows); fix: give the export itself")
    enc = encoding or sniff_encoding(data)
    if enc == "binary":
        raise Unreadable(f"{path}: not a text file (NUL bytes, not UTF-16); fix: export it as CSV (UTF-8), "
                         "or give --encoding")
    try:
        codec = codecs.lookup(enc).name
    except LookupError:
        raise Unreadable(f"{path}: unknown encoding {enc!r}; fix: give --encoding a Python codec name "
                         "(utf-8, cp1252, latin-1, utf-16)") from None
    text = data.decode(codec, "replace").lstrip("\ufeff")
    if cut:
        text = text[: text.rfind("\n") + 1]
    bad = text.count("\ufffd")
    notes = [f"{bad} character(s) of the sample do not decode as {enc}: check encoding:"] if bad else []
    delim = delimiter or sniff_delimiter(text)
    reader = csv.reader(io.StringIO(text), delimiter=delim)
    try:
        header = next(reader)
        raw = []
        for r in reader:
            if any(c.strip() for c in r):
                raw.append(r)
            if len(raw) > sample:
                break
    except StopIteration:
        header, raw = [], []
    except csv.Error as exc:
        raise Unreadable(f"{path}: not readable as CSV with delimiter {delim!r} ({exc}); fix: give --delimiter") from None
    if cut and len(raw) <= sample and raw:
        raw.pop()  # the last record may be cut short by the head's end
    raw = raw[:sample]
    if not header or not any(h.strip() for h in header):
        raise Unreadable(f"{path}: no header line; fix: give a CSV export whose first line names the columns")
    if not raw:
        raise Unreadable(f"{path}: a header and no data rows; fix: export some rows (init infers types from them)")
    if all(_DATA_CELL.match(h.strip()) for h in header):
        notes.append("the first line looks like data, not column names: a mapping needs a header line")
    if len(header) == 1 and delimiter is None:
        notes.append("one column found: if the file has another delimiter, give --delimiter")
    unique = unique_names(header)
    rows = [dict(zip(unique, r)) for r in raw]
    return Sample(enc, delim, unique, rows, notes)
