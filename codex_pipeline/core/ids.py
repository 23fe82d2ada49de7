"""Deterministic identifiers: document URNs, chunk ids and seed-003 locators."""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata

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


def content_hash(text: str) -> str:
    """SHA-256 of a chunk's text, for change detection and lookup by content."""
    return hashlib.sha256(text.encode()).hexdigest()


_OCR_HYPHEN = re.compile(r"(?<=\w)-[ \t]*\n[ \t]*(?=[a-z])")  # "exam-\nple" -> "example"
_DIGITS = re.compile(r"\d+")
REV_SHORT, REV_LONG = 8, 12


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
    hyphens are joined; every run of whitespace becomes one space; ends are stripped.
    """
    text = unicodedata.normalize("NFC", text)
    if "\f" in text:
        text = "\n".join(_strip_running_lines(text.split("\f")))
    if "-" in text:
        text = _OCR_HYPHEN.sub("", text)
    return " ".join(text.split())


def revision_digest(text: str) -> str:
    """SHA-1 hex of the normalized document text: ``rev8`` is its first 8 chars, ``rev12`` its first 12."""
    return hashlib.sha1(normalize_text(text).encode()).hexdigest()


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
        digest = revision_digest(text)
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
