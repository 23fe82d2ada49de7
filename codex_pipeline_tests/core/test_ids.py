import re

import pytest

from codex_pipeline.core.ids import make_chunk_id, make_doc_id, make_locator, revision8


def test_chunk_id_golden_and_format() -> None:
    cid = make_chunk_id("urn:aprs:narrative:a.txt", "window.0")
    assert re.fullmatch(r"urn:aprs:chunk:[0-9a-f]{16}", cid)
    # pinned: changing the id recipe re-keys every vector index downstream
    assert cid == "urn:aprs:chunk:" + __import__("hashlib").sha256(
        b"urn:aprs:narrative:a.txt\x1fwindow.0").hexdigest()[:16]
    assert make_chunk_id("urn:aprs:narrative:a.txt", "window.0") == cid


def test_chunk_id_separator_is_unambiguous() -> None:
    assert make_chunk_id("urn:aprs:x:a", "b.c") != make_chunk_id("urn:aprs:x:ab", ".c")
    with pytest.raises(ValueError):
        make_chunk_id("urn:aprs:x:a\x1f", "b")


def test_doc_id_and_locator() -> None:
    assert make_doc_id("permit_signals", "BP2024-1") == "urn:aprs:permit_signals:BP2024-1"
    with pytest.raises(ValueError, match="empty record id"):
        make_doc_id("narrative", " ")
    loc = make_locator("a.txt", revision8("hello"), "window.3", None, 2)
    assert re.fullmatch(r"a\.txt\|r=[0-9a-f]{8}\|s=window\.3\|p=000\|b=002", loc)
