"""Deterministic identifiers: document URNs, chunk ids and seed-003 locators."""

from __future__ import annotations

import hashlib

CHUNK_ID_PREFIX = "urn:aprs:chunk:"
CHUNK_ID_PATTERN = r"^urn:aprs:chunk:[0-9a-f]{16}$"
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


def revision8(text: str) -> str:
    """Seed-003 ``rev8``: 8 hex of SHA-1 over the document's canonical text.

    The canonical text is already the normalized text layer (decoded, newlines
    normalized, markup removed), so it is hashed as is.
    """
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def make_locator(doc_uid: str, rev8: str, section_path: str, page: int | None, block: int) -> str:
    """Seed-003 human-inspectable address ``{doc_uid}|r={rev8}|s={path}|p={page3}|b={block3}``."""
    return f"{doc_uid}|r={rev8}|s={section_path}|p={(page or 0):03d}|b={block:03d}"
