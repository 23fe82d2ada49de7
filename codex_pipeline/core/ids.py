"""Deterministic identifiers: document URNs, chunk ids and seed-003 locators."""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence

import numpy as np

CHUNK_ID_PREFIX = "urn:aprs:chunk:"
CHUNK_ID_PATTERN = r"^urn:aprs:chunk:[0-9a-f]{16}$"
_log = logging.getLogger(__name__)
_SEP = "\x1f"  # ASCII unit separator: cannot occur in a URN or a section id


def make_doc_id(dataset: str, record_id: str) -> str:
    """``urn:aprs:{dataset}:{record id}``; the record id must be non-empty."""
    if not record_id or not str(record_id).strip():
        raise ValueError(f"dataset {dataset!r}: empty record id")
    return f"urn:aprs:{dataset}:{record_id}"


def make_chunk_id(doc_id: str, section_id: str) -> str:
    """First 16 hex of SHA-256(doc_id, section_id).

    Depends on neither the text, the run time nor the chunking version, so an edited
    section keeps its id and re-running unchanged input yields identical ids.
    """
    if _SEP in doc_id or _SEP in section_id:
        raise ValueError("doc_id and section_id must not contain U+001F")
    digest = hashlib.sha256(f"{doc_id}{_SEP}{section_id}".encode()).hexdigest()
    return CHUNK_ID_PREFIX + digest[:16]


def chunk_id_of(doc_id: str) -> Callable[[str], str]:
    """``make_chunk_id`` for the sections of one document: its ``doc_id`` encoded once."""
    prefix = f"{doc_id}{_SEP}".encode()
    sha256 = hashlib.sha256

    def chunk_id(section_id: str) -> str:
        if _SEP in section_id:
            raise ValueError("doc_id and section_id must not contain U+001F")
        return CHUNK_ID_PREFIX + sha256(prefix + section_id.encode()).hexdigest()[:16]

    return chunk_id


def content_hash(text: str) -> str:
    """SHA-256 of a chunk's text, for change detection and lookup by content."""
    return hashlib.sha256(text.encode()).hexdigest()


_OCR_HYPHEN = re.compile(r"(?<=\w)-[ \t]*\n[ \t]*(?=[a-z])")  # "exam-\nple" -> "example"
_DIGITS = re.compile(r"\d+")
REV_SHORT, REV_LONG = 8, 12
NORMALIZATION = "1"
"""Revision of :func:`normalize_text`. Raw files store each document's ``revision_digest`` with it
(the column's ``codex.normalization`` metadata); a digest stored under another revision is not
used but computed again, so changing the normalization means bumping this."""

# Every character ``str.split()`` treats as whitespace beyond ASCII (``str.isspace``; a test
# checks this list against the running Python's Unicode database).
WIDE_SPACES = frozenset("\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                        "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_WIDE_STANDIN = "\x1c"  # an ASCII character str.split() also splits on, and no [ \t], \n, \w or [a-z]
_SPACE, _TAB, _NEWLINE, _DASH = 0x20, 0x09, 0x0A, 0x2D
# bytes that can end a \w character: ASCII letters, digits, "_", and any byte of a multi-byte one
_WORDISH = np.array([chr(b).isascii() and (chr(b).isalnum() or b == 0x5F) or b >= 0x80 for b in range(256)])


def _strip_running_lines(pages: list[str]) -> list[str]:
    """Drop a page's first / last line when it recurs (digits aside) on most pages: headers, footers."""
    if len(pages) < 3:
        return pages
    lines = [p.strip("\n").split("\n") for p in pages]
    out = [list(ls) for ls in lines]
    for pick in (0, -1):
        keys = [_DIGITS.sub("#", ls[pick].strip()) if ls and ls[pick].strip() else None for ls in lines]
        counts: dict[str, int] = {}
        for k in keys:
            if k is not None:
                counts[k] = counts.get(k, 0) + 1
        for ls, k in zip(out, keys):
            if k is not None and counts[k] * 2 > len(pages) and ls:
                ls.pop(pick)
    return ["\n".join(ls) for ls in out]


def normalize_text(text: str) -> str:
    """Seed-003 ``normalize_text``: what ``rev`` hashes, so only a meaningful edit changes it.

    Unicode NFC; pages (form feeds) lose their running headers and footers; OCR line-break
    hyphens (``exam-\nple``: a word character, ``-``, spaces or tabs, one newline, spaces or
    tabs, a lowercase ASCII letter) are joined; every run of whitespace (``str.split``'s)
    becomes one space; ends are stripped.
    """
    return normalized_utf8([text])[0].decode()


def revision_digest(text: str) -> str:
    """SHA-1 hex of the normalized document text: ``rev8`` is its first 8 chars, ``rev12`` its first 12."""
    return revision_digests([text])[0]


def revision_digests(texts: Sequence[str]) -> list[str]:
    """``revision_digest`` of many texts, normalized together (see :func:`normalized_utf8`)."""
    sha1 = hashlib.sha1
    return [sha1(b).hexdigest() for batch in _normalized_batches(texts) for b in batch]  # a batch at a time


BATCH_BYTES = 8_000_000
"""UTF-8 bytes normalized in one pass (a copy of them is held while it runs)."""


def normalized_utf8(texts: Sequence[str]) -> list[bytes]:
    """``normalize_text(t).encode()`` of each text, computed on UTF-8 bytes with whole-array scans.

    Every chunk run hashes every document, so this is on the chunk step's hot path. Instead
    of a regex tried at each position and a list of every word, it finds the few places
    that change (runs of whitespace, a ``-`` before whitespace) with numpy comparisons over
    the texts laid end to end, and copies the bytes between them. NFC runs only on a text
    with a character that could change under it. The seed's definition is kept, step for
    step, by the property tests beside it.
    """
    return [b for batch in _normalized_batches(texts) for b in batch]


def _normalized_batches(texts: Sequence[str]) -> Iterator[list[bytes]]:
    """``normalized_utf8`` of consecutive runs of texts of about ``BATCH_BYTES``."""
    batch: list[bytes] = []
    size = 0
    for text in texts:
        data = _unicode_steps(text)
        if batch and size + len(data) > BATCH_BYTES:
            yield _join_and_collapse(batch)
            batch, size = [], 0
        batch.append(data)
        size += len(data) + 1
    if batch:
        yield _join_and_collapse(batch)


def _unicode_steps(text: str) -> bytes:
    """NFC, the page step and wide spaces turned into an ASCII stand-in; the result as UTF-8."""
    data = text.encode()
    t = text
    wide: frozenset[str] = frozenset()
    if not text.isascii():
        a = np.frombuffer(data, dtype=np.uint8)
        chars = set(a[np.flatnonzero(a >= 0x80)].tobytes().decode())  # the non-ASCII bytes, decoded together
        if not _nfc_stable(chars):
            t = unicodedata.normalize("NFC", t)
            chars = {c for c in t if c > "\x7f"}
        wide = WIDE_SPACES.intersection(chars)
    if "\f" in t:
        t = "\n".join(_strip_running_lines(t.split("\f")))
    for c in sorted(wide):  # after the page step, which compares lines with their own spaces
        t = t.replace(c, _WIDE_STANDIN)
    return data if t is text else t.encode()


def _nfc_stable(chars: set[str]) -> bool:
    """Whether any text made of ASCII and ``chars`` is already NFC (False: run the normalizer).

    Below U+0300 every character is NFC with combining class 0. Above, the characters must
    have combining class 0 and pass the NFC quick check, which ``unicodedata.normalize``
    reports by returning its argument itself (CPython; elsewhere the answer is just False).
    """
    big = sorted(c for c in chars if c >= "\u0300")
    if not big:
        return True
    if any(unicodedata.combining(c) for c in big):
        return False
    probe = "".join(big)
    return unicodedata.normalize("NFC", probe) is probe


_SPACES = np.full(1 << 16, _SPACE, dtype=np.uint8)  # read-only; replaced by a longer one when a batch needs it


def _spaces(n: int) -> np.ndarray:
    """``n`` space bytes (a view of one array kept for the process, so no fill per batch)."""
    global _SPACES
    if n > BATCH_BYTES:  # one text over the batch size: not kept
        return np.full(n, _SPACE, dtype=np.uint8)
    if len(_SPACES) < n:
        _SPACES = np.full(min(max(n, 2 * len(_SPACES)), BATCH_BYTES), _SPACE, dtype=np.uint8)
    return _SPACES[:n]


_GAP = b"#"  # laid between texts: neither whitespace, "-", nor a word character


def _join_and_collapse(datas: list[bytes]) -> list[bytes]:
    """OCR hyphens joined, whitespace runs collapsed to one space, ends stripped (UTF-8 in and out).

    Whitespace here is ASCII only (bytes 9-13 and 28-32): wider spaces were replaced by a
    stand-in before. A text with a byte below 32 that is not whitespace takes the plain path.
    """
    whole = _GAP.join(datas)
    a = np.frombuffer(whole, dtype=np.uint8)
    n = len(a)
    # (a - 14) wraps bytes 0-13 round to 242-255, so its minimum is below 14 only for a byte in 14-27
    if n < 2 or a.min() < 9 or (a - np.uint8(14)).min() < 14:
        if len(datas) > 1:
            return [x for d in datas for x in _join_and_collapse([d])]
        return [" ".join(_OCR_HYPHEN.sub("", whole.decode()).split()).encode()]
    ws = a <= _SPACE
    # i where byte i+1 is whitespace and byte i is whitespace (i+1 goes) or "-" (a hyphen candidate)
    events = np.flatnonzero(ws[1:] & (ws[:-1] | (a[:-1] == _DASH)))
    is_dash = a[events] == _DASH
    ends = np.cumsum([len(d) + 1 for d in datas]) - 1  # where each text's gap byte is (one past the last)
    drop = np.concatenate((events[~is_dash] + 1, ends[:-1]))  # the gaps go too, so no kept stretch crosses one
    if is_dash.any():
        dashes = events[is_dash]
        dashes = dashes[_WORDISH[a[dashes - 1]] & (dashes > 0)]  # a list item's "- " has no word before it
        joins = _ocr_hyphens(whole, dashes.tolist())
        if joins:
            j = np.array(joins, dtype=np.int64)
            drop = np.concatenate((drop, j, j + 1))
    # a few sorted runs, which timsort merges; no position twice (a gap is no whitespace, and a
    # joined dash and the byte after it follow no whitespace)
    drop.sort(kind="stable")
    # every whitespace byte becomes a space (against an array: numpy's vector loop; a scalar is not)
    spaced = np.maximum(a, _spaces(n)).tobytes()
    if not len(drop):
        return [spaced.strip(b" ")]
    cut = np.flatnonzero(np.diff(drop) != 1)
    starts = np.concatenate(([0], drop[cut] + 1, drop[-1:] + 1))  # the kept stretches between dropped runs
    stops = np.concatenate((drop[:1], drop[cut + 1], [n]))
    # each text's stretches, in order: those starting after the previous text's gap byte
    firsts = np.searchsorted(starts, ends - np.array([len(d) for d in datas])).tolist() + [len(starts)]
    starts_, stops_ = starts.tolist(), stops.tolist()
    return [b"".join([spaced[s:e] for s, e in zip(starts_[i:j], stops_[i:j])]).strip(b" ")
            for i, j in zip(firsts, firsts[1:])]


def _ocr_hyphens(data: bytes, dashes: list[int]) -> list[int]:
    """The dashes (byte offsets) that ``_OCR_HYPHEN`` removes: a word character before, then
    spaces or tabs, one newline, spaces or tabs and a lowercase ASCII letter."""
    n = len(data)
    out = []
    for i in dashes:
        j = i + 1
        while j < n and data[j] in (_SPACE, _TAB):
            j += 1
        if j >= n or data[j] != _NEWLINE:
            continue
        j += 1
        while j < n and data[j] in (_SPACE, _TAB):
            j += 1
        if i == 0 or j >= n or not 0x61 <= data[j] <= 0x7A:
            continue
        k = i - 1
        while k > 0 and data[k] & 0xC0 == 0x80:  # back to the first byte of the character before
            k -= 1
        c = data[k:i].decode()
        if c.isalnum() or c == "_":  # what \w matches in a str pattern
            out.append(i)
    return out


def revision8(text: str) -> str:
    """Seed-003 ``rev8``: 8 hex of SHA-1 over ``normalize_text(doc)``."""
    return revision_digest(text)[:REV_SHORT]


class RevisionLedger:
    """The seed's collision policy: a ``doc_uid|r=rev8`` already minted for other text gets ``rev12``.

    One ledger per chunking run (or longer, when a caller keeps it): it remembers the full
    digest behind each ``(doc_uid, rev8)`` it handed out and warns when a different text
    would reuse the pair.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str] = {}
        self.collisions: list[tuple[str, str]] = []

    def revision(self, doc_uid: str, text: str) -> str:
        """``text``'s rev in ``doc_uid``'s locators: its rev8, or rev12 if that rev8 was minted for other text."""
        return self.revision_of_digest(doc_uid, revision_digest(text))

    def revision_of_digest(self, doc_uid: str, digest: str) -> str:
        """``revision`` of a text whose ``revision_digest`` the caller computed (e.g. many at once)."""
        short = digest[:REV_SHORT]
        first = self._seen.setdefault((doc_uid, short), digest)
        if first == digest:
            return short
        self.collisions.append((doc_uid, short))
        _log.warning("locator revision collision for %s|r=%s: using rev12 %s", doc_uid, short, digest[:REV_LONG])
        return digest[:REV_LONG]


def locator_uid(record_id: str) -> str:
    """A record id as the locator's ``doc_uid``: ``%`` and ``|`` escaped so the address stays parseable."""
    return record_id.replace("%", "%25").replace("|", "%7C")


def make_locator(doc_uid: str, rev: str, section_path: str, page: int | None, block: int, width: int = 3) -> str:
    """Seed-003 address ``{doc_uid}|r={rev8}|s={path}|p={page3}|b={block3}``.

    Page and block are zero-padded to ``width`` (3, or more when a document has over 999
    blocks, so the padding stays equal within a document and text sort equals number sort).
    """
    return f"{doc_uid}|r={rev}|s={section_path}|p={(page or 0):0{width}d}|b={block:0{width}d}"


LOCATOR_PATTERN = r"^(?P<uid>[^|]+)\|r=(?P<rev>[0-9a-f]{8}|[0-9a-f]{12})\|s=(?P<section>[^|]+)\|p=(?P<page>\d{3,})\|b=(?P<block>\d{3,})$"
_LOCATOR = re.compile(LOCATOR_PATTERN)


def parse_locator(locator: str) -> dict[str, str] | None:
    """The parts of a locator (``uid``, ``rev``, ``section``, ``page``, ``block``), or None if malformed."""
    m = _LOCATOR.match(locator)
    return m.groupdict() if m else None
