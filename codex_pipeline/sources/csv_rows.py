"""CSV files read row by row with their physical line numbers: every row lands or is a named reject.

Measured against DuckDB's ``read_csv`` (``store_rejects``) and pyarrow's
``invalid_row_handler`` on a 10-row file with an unterminated quote in row 4: pyarrow
returns 4 rows and reports nothing, DuckDB either sniffs the quote away (the stray
``"`` kept in the cell) or, told the quote character, refuses the whole file. Python's
``csv`` module is the one whose state we can restart: the file is split into physical
lines first, each record's first and last line are known, and a record that goes wrong
is re-read from its next line. So:

- a quoted field that never closes, spans more than :data:`MAX_RECORD_LINES` lines, or
  leaves its record with the wrong number of cells rejects only the line it opened on;
  reading restarts at the next line (a stray quote never swallows the rest of the file);
- a row with fewer or more cells than the header is a reject naming both counts;
- a line that is not valid in the file's encoding is a reject naming the byte and the fix;
- a repeated header name keeps both columns (the second read as ``NAME_2``);
- a UTF-8 byte-order mark is dropped whatever the encoding; a UTF-16/UTF-32 one decodes the file.

``row N`` in a ref is the physical line the record starts on (line 1 is the header).

Known limit: a stray quote is caught when its field never closes, breaks the CSV grammar
or leaves its record with the wrong cell count. A later quoted cell that opens with the
delimiter, a line break or a quote (``",x"``) can close it so that the record has the right count:
the lines between then land inside one cell of the broken row (counted, not lost, but not
their own rows). CSV alone cannot tell that case from a long quoted text.
"""

from __future__ import annotations

import codecs
import csv
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.files import DEFAULT_MAX_BYTES, _nul_encoding

MAX_RECORD_LINES = 200
"""A quoted field running over more lines than this is taken for a stray quote, not a long text."""

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


@dataclass
class CsvFile:
    """What one CSV file held: its header, each good row (dict by column) with its ref, and rejects.

    ``rows_read`` counts every data record found (good rows plus row rejects), so
    ``len(rows) + rows rejected == rows_read`` always holds for the file.
    """

    rel: str
    header: list[str] = field(default_factory=list)
    rows: list[dict[str, str]] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    rows_read: int = 0
    renamed: dict[str, str] = field(default_factory=dict)  # a repeated header name's new name -> the name

    def reject_file(self, reason: str, rows: int) -> CsvFile:
        """The whole file as one reject standing for its ``rows`` data rows."""
        self.rows_read = rows
        self.rejects.append(Reject(self.rel, reason, rows=rows))
        return self


def read_csv_file(path: Path, day_dir: Path, delimiter: str = ",", encoding: str = "utf-8",
                  max_bytes: int = DEFAULT_MAX_BYTES) -> CsvFile:
    """Every record of a CSV landing file, as rows or named rejects (see the module's docstring)."""
    out = CsvFile(path.relative_to(day_dir).as_posix())
    try:
        if not path.is_file():
            return out.reject_file("unreadable file: not a regular file (broken link, socket or device)", 0)
        size = path.stat().st_size
        if size > max_bytes:
            with path.open("rb") as f:
                count = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
            return out.reject_file(f"file is {size} bytes ({count} lines), over the {max_bytes}-byte limit; "
                                   "fix: split the export into smaller files", max(count - 1, 0))
        data = path.read_bytes()
    except OSError as exc:
        return out.reject_file(f"unreadable file: {exc.strerror or exc}", 0)
    lines = _physical_lines(data, encoding, out)
    if lines is None:
        return out
    _parse(lines, delimiter, encoding, out)
    return out


def _physical_lines(data: bytes, encoding: str, out: CsvFile) -> list[str | bytes] | None:
    """The file's lines, each decoded on its own (bytes: a line that does not decode); None: rejected whole."""
    bom = next(((b, enc) for b, enc in _BOMS if data.startswith(b)), None)
    try:
        codec = codecs.lookup(bom[1] if bom and bom[1] != "utf-8" else encoding).name
    except LookupError:
        out.reject_file(f"unknown encoding {encoding!r}; fix: set encoding: to a Python codec name such as "
                        "utf-8, cp1252 or latin-1 in the mapping", _count_rows(data))
        return None
    if bom and bom[1] == "utf-8":
        data = data[len(bom[0]):]
    if codec.replace("-", "_").startswith(("utf_16", "utf_32")):  # not an ASCII superset: decode whole, then split
        try:
            text = data.decode(codec)
        except UnicodeDecodeError as exc:
            rows = _count_rows(data.decode(codec, "replace").encode("utf-8"))
            out.reject_file(f"not valid {codec} at byte {exc.start}: {exc.reason}; fix: re-save the file as UTF-8", rows)
            return None
        return [line.decode("utf-8") for line in _split(text.encode("utf-8"))]
    if b"\x00" in data[:4096]:
        rows = max(_count_rows(data.replace(b"\x00", b"")), 0)
        out.reject_file(f"the file holds NUL bytes: {_nul_encoding(data)}; fix: re-save it as UTF-8 "
                        "(or set encoding: utf-16 in the mapping)", rows)
        return None
    try:  # the usual file decodes whole: one decode, then split the text
        text = data.decode(codec)
    except UnicodeDecodeError:
        return [_decode(line, codec) for line in _split(data)]
    sep = "\n" if "\n" in text or "\r" not in text else "\r"
    parts = text.split(sep)
    lines: list[str | bytes] = [p + sep for p in parts[:-1]]
    return lines + ([parts[-1]] if parts[-1] else [])


DROP_LINES = 4096
"""Parsed lines a :class:`_LineSource` gathers before it drops them."""


class _LineSource:
    """A file's physical lines by 0-based index, read block by block as the parser asks for them.

    Lines before :attr:`base` have been parsed and dropped: the parser only looks back to the
    first line of the record in hand, so memory holds a page of lines, not the file.
    """

    def __init__(self, blocks: Iterator[list[str | bytes]]) -> None:
        self.buf: list[str | bytes] = []
        self.base = 0
        self._blocks = blocks

    @classmethod
    def of(cls, lines: list[str | bytes]) -> _LineSource:
        """All lines at hand (the whole-file reader)."""
        src = cls(iter(()))
        src.buf = lines
        return src

    def has(self, i: int) -> bool:
        """Whether line ``i`` exists (reading blocks until it is in the buffer or the file ends)."""
        while i - self.base >= len(self.buf):
            block = next(self._blocks, None)
            if block is None:
                return False
            self.buf.extend(block)
        return True

    def __getitem__(self, i: int) -> str | bytes:
        return self.buf[i - self.base]

    def drop_before(self, i: int) -> None:
        """Forget the lines before ``i`` (once :data:`DROP_LINES` of them: a list's prefix delete copies the rest)."""
        if i - self.base >= DROP_LINES:
            del self.buf[:i - self.base]
            self.base = i


PAGE_ROWS = 5000
"""Rows (and row rejects) per page of :func:`iter_csv_pages`."""
BLOCK_BYTES = 1 << 20
"""Bytes read at a time by :func:`iter_csv_pages`."""


def iter_csv_pages(path: Path, day_dir: Path, delimiter: str = ",", encoding: str = "utf-8",
                   page_rows: int = PAGE_ROWS, block_bytes: int = BLOCK_BYTES) -> Iterator[CsvFile]:
    """The records of :func:`read_csv_file`, a page at a time: the same rows, refs and rejects, in order.

    Each page is a :class:`CsvFile` (same ``rel``, ``header`` and ``renamed``) holding about
    ``page_rows`` rows and rejects, ``rows_read`` counting that page's. The file is read in
    ``block_bytes`` blocks, each decoded on its own, so no file is too large and memory holds a
    page. A file whose first block is not an ordinary ASCII-compatible text (a UTF-16/32 byte-order
    mark, NUL bytes, an unknown encoding, a header that does not decode or is empty, line breaks
    that are lone ``\\r``) is read whole by :func:`read_csv_file` (its size limit applies) and paged.
    """
    out = CsvFile(path.relative_to(day_dir).as_posix())
    try:
        f = path.open("rb") if path.is_file() else None
    except OSError:
        f = None
    if f is None:
        yield read_csv_file(path, day_dir, delimiter, encoding)
        return
    with f:
        try:
            first = f.read(block_bytes)
        except OSError:
            first = None
        codec = _plain_codec(first, encoding) if first is not None else None
        head = first.split(b"\n", 1)[0] if first else b""
        if codec is None or b"\n" not in (first or b"") or _decode(head, codec).__class__ is not str or not head.strip():
            yield read_csv_file(path, day_dir, delimiter, encoding)
            return
        assert first is not None
        if first.startswith(codecs.BOM_UTF8):
            first = first[len(codecs.BOM_UTF8):]
        source = _LineSource(_blocks(f, first, codec, block_bytes))
        if not _header([source[0] if source.has(0) else ""], delimiter, codec, out):
            yield read_csv_file(path, day_dir, delimiter, encoding)
            return
        for _ in _parse_pages(source, delimiter, codec, out, page_rows):
            page = dataclasses.replace(out)
            out.rows, out.refs, out.rejects, out.rows_read = [], [], [], 0
            yield page
        yield out


def _plain_codec(first: bytes, encoding: str) -> str | None:
    """The codec to read ``first`` (the file's first block) line by line with; None: read the file whole."""
    if any(first.startswith(b) for b, enc in _BOMS if enc != "utf-8") or b"\x00" in first[:4096]:
        return None
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        return None
    return None if codec.replace("-", "_").startswith(("utf_16", "utf_32")) else codec


def _blocks(f: BinaryIO, first: bytes, codec: str, block_bytes: int) -> Iterator[list[str | bytes]]:
    """The file's physical lines, a block at a time, each block cut after its last ``\\n`` and decoded
    (the lines one by one when the block does not decode: a line that does not stays bytes)."""
    rest = b""
    data = first
    while True:
        buf = rest + data
        if not data:
            if buf:
                yield [_decode(buf, codec)]
            return
        cut = buf.rfind(b"\n") + 1
        rest = buf[cut:]
        if cut:
            chunk = buf[:cut]
            try:
                text = chunk.decode(codec)
            except UnicodeDecodeError:
                yield [_decode(line, codec) for line in _split(chunk)]
            else:
                parts = text.split("\n")
                yield [p + "\n" for p in parts[:-1]]
        data = f.read(block_bytes)


def _count_rows(data: bytes) -> int:
    """Data rows of a file that cannot be parsed: its non-empty lines after the header."""
    return max(sum(1 for line in data.splitlines() if line.strip()) - 1, 0)


def _split(data: bytes) -> list[bytes]:
    """Physical lines with their endings (``\\n``, ``\\r\\n``, or lone ``\\r`` in a file without ``\\n``)."""
    sep = b"\n" if b"\n" in data or b"\r" not in data else b"\r"
    parts = data.split(sep)
    return [p + sep for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _decode(line: bytes, codec: str) -> str | bytes:
    try:
        return line.decode(codec)
    except UnicodeDecodeError:
        return line


def _bad_bytes(line: bytes, codec: str) -> str:
    try:
        line.decode(codec)
    except UnicodeDecodeError as exc:
        return f"byte {exc.start} ({line[exc.start:exc.start + 4]!r}) is not {codec}"
    return f"not {codec}"


def _records(lines: _LineSource, start: int, delimiter: str) -> Iterator[tuple[int, int, list[str] | str]]:
    """``(first line, last line, cells or csv's complaint)`` from 0-based line ``start`` on, 1-based lines.

    A line that did not decode ends the run (the caller rejects it and starts again after it).
    """
    pos = start

    first = start

    def feed() -> Iterator[str]:
        nonlocal pos
        while lines.has(pos):
            line = lines[pos]
            if isinstance(line, bytes) or pos - first >= MAX_RECORD_LINES:  # csv then says where the record broke
                return
            pos += 1
            yield line

    reader = csv.reader(feed(), delimiter=delimiter, strict=True)
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield first + 1, pos, str(exc)
            return
        yield first + 1, pos, cells
        first = pos


def _parse(lines: list[str | bytes], delimiter: str, codec: str, out: CsvFile) -> None:
    """Header from the first line, then every record; a broken one rejected, reading resumed after it."""
    if _header(lines, delimiter, codec, out):
        for _ in _parse_pages(_LineSource.of(lines), delimiter, codec, out, 0):
            pass


def _header(lines: list[str | bytes], delimiter: str, codec: str, out: CsvFile) -> bool:
    """``out.header`` from the first line; False when the file is rejected whole (bad or empty header)."""
    head = lines[0] if lines else ""
    if isinstance(head, bytes):
        out.reject_file(f"line 1 (the header): {_bad_bytes(head, codec)}; fix: set encoding: (cp1252 or latin-1) "
                        "in the mapping, or re-save the file as UTF-8", _count_rows(b"".join(
                            x if isinstance(x, bytes) else x.encode() for x in lines)))
        return False
    header_cells = next(csv.reader([head], delimiter=delimiter), []) if head.strip() else []
    if not header_cells:
        if any(isinstance(x, bytes) or x.strip() for x in lines):
            out.reject_file("line 1 (the header) is empty; fix: put the column names on the first line",
                            sum(1 for x in lines[1:] if isinstance(x, bytes) or x.strip()))
        else:
            out.reject_file("empty file: no header and no rows; fix: export it again (with its header line)", 0)
        return False
    out.header = _unique(header_cells, out)
    return True


def _parse_pages(lines: _LineSource, delimiter: str, codec: str, out: CsvFile, page_rows: int) -> Iterator[None]:
    """Every record after the header into ``out``; yields each time ``out`` holds ``page_rows`` rows and
    rejects (0: never), so the caller can take the page and empty ``out``. Lines before the record
    being read are dropped from ``lines`` as it goes: memory holds a page, not the file."""
    width = len(out.header)
    i = 1
    while lines.has(i):
        line = lines[i]
        if isinstance(line, bytes):
            if line.strip():
                _reject(out, i + 1, f"{_bad_bytes(line, codec)}; fix: set encoding: cp1252 (or latin-1) in the "
                        "mapping if the export is not UTF-8, or re-save the file as UTF-8",
                        line.decode(codec, "replace"))
            i += 1
            continue
        resume = None
        for first, last, cells in _records(lines, i, delimiter):
            if isinstance(cells, str) or (last > first and len(cells) != width):
                why = cells if isinstance(cells, str) else f"the record then has {len(cells)} cell(s), not {width}"
                _reject(out, first, f"a quoted field opened on this line does not close where it should "
                        f"({why}; read to line {last}); fix: close the quote, or double a quote inside a "
                        "quoted field (\"\")", _text(lines[first - 1]))
                resume = first  # 0-based index of the line after the broken record's first line
                break
            if page_rows and len(out.rows) + len(out.rejects) >= page_rows:
                yield  # a page is full; the record in hand goes to the next one
                lines.drop_before(first - 1)
            if not cells or (len(cells) == 1 and not cells[0].strip() and width > 1):
                continue  # a blank line is no row
            if len(cells) != width:
                few = len(cells) < width
                _reject(out, first, f"{len(cells)} cell(s), the header has {width}: "
                        f"{f'{width - len(cells)} cell(s) missing' if few else f'{len(cells) - width} cell(s) beyond the header'}; fix: "
                        f"{'add the missing cells (empty ones too)' if few else 'quote cells that hold the delimiter'}",
                        _text(lines[first - 1]))
                continue
            out.rows_read += 1
            out.rows.append(dict(zip(out.header, cells)))
            out.refs.append(f"row {first}")
        i = resume if resume is not None else _next_start(lines, i)


def _next_start(lines: _LineSource, i: int) -> int:
    """Where reading goes on after :func:`_records` stopped: the first undecodable line at or after ``i``."""
    i = max(i, lines.base)  # the lines before were read (decoded ones) and dropped
    while lines.has(i) and not isinstance(lines[i], bytes):
        i += 1
    return i


def _reject(out: CsvFile, line: int, reason: str, excerpt: str) -> None:
    out.rows_read += 1
    out.rejects.append(Reject(out.rel, reason, f"row {line}", excerpt[:300]))


def _text(line: str | bytes) -> str:
    return (line.decode("utf-8", "replace") if isinstance(line, bytes) else line).rstrip("\r\n")


def _unique(header: list[str], out: CsvFile) -> list[str]:
    """Header names made unique (:func:`unique_names`), each renamed one recorded with its name in the file."""
    names = unique_names(header)
    out.renamed.update({new: old for new, old in zip(names, header) if new != old})
    return names


def unique_names(header: list[str]) -> list[str]:
    """Header names made unique: a repeated ``NAME`` becomes ``NAME_2``, ``NAME_3`` (none is lost)."""
    seen: dict[str, int] = {}
    names = []
    taken = set(header)
    for name in header:
        if name not in seen:
            seen[name] = 1
            names.append(name)
            continue
        n = seen[name]
        new = f"{name}_{n + 1}"
        while new in taken:
            n += 1
            new = f"{name}_{n + 1}"
        seen[name] = n + 1
        taken.add(new)
        names.append(new)
    return names
