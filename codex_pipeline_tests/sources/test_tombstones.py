"""The `_deleted.txt` / `_deleted.jsonl` landing convention: parsing, rejects, readers never see it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from codex_pipeline.sources.files import landing_files, landing_scope
from codex_pipeline.sources.narrative import load_narrative_day
from codex_pipeline.sources.tombstones import TOMBSTONE_FILES, read_tombstones, without_tombstones

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_text_and_json_lines_are_read_and_bad_lines_rejected(tmp_path: Path) -> None:
    (tmp_path / "_deleted.txt").write_text(
        "# retracted after the recall\n"
        "notice.txt\n"
        "\n"
        "  urn:aprs:narrative:old page.html  \n"
        "urn:aprs:permits:P-1\n"
        "bad\x07id\n"
        "notice.txt\n"
    )
    (tmp_path / "_deleted.jsonl").write_text(
        '{"record_id": "a.txt", "reason": "withdrawn"}\n'
        '{"doc_id": "urn:aprs:narrative:b.txt"}\n'
        "[1, 2]\n"
        '{"record": "c.txt"}\n'
        "{not json\n"
        '{"record_id": "notice.txt"}\n'
    )
    got = read_tombstones(tmp_path, "narrative")
    assert [(t.record_id, t.source_file, t.line) for t in got.tombstones] == [
        ("notice.txt", "_deleted.txt", 2),
        ("old page.html", "_deleted.txt", 4),
        ("a.txt", "_deleted.jsonl", 1),
        ("b.txt", "_deleted.jsonl", 2),
    ]
    reasons = [(r.source_file, r.record_ref, r.stage, r.reason) for r in got.rejects]
    assert reasons == [
        ("_deleted.txt", "line 5", "tombstone",
         "'urn:aprs:permits:P-1' is a document of another dataset (expected urn:aprs:narrative:…)"),
        ("_deleted.txt", "line 6", "tombstone", "record id 'bad\\x07id' contains a control character"),
        ("_deleted.jsonl", "line 3", "tombstone", "expected a JSON object with a record_id, got list"),
        ("_deleted.jsonl", "line 4", "tombstone", "no string field record_id (or doc_id)"),
        ("_deleted.jsonl", "line 5", "tombstone", "not JSON: Expecting property name enclosed in double quotes at column 2"),
    ]


def test_a_record_landing_the_same_day_cannot_be_retracted(tmp_path: Path) -> None:
    (tmp_path / "_deleted.txt").write_text("a.txt\nb.txt\n")
    got = read_tombstones(tmp_path, "narrative").split_landed({"b.txt", "c.txt"})
    assert [t.record_id for t in got.tombstones] == ["a.txt"]
    (reject,) = got.rejects
    assert reject.record_ref == "line 2" and "also lands in this folder" in reject.reason


def test_an_unreadable_file_is_one_reject(tmp_path: Path) -> None:
    (tmp_path / "_deleted.txt").write_bytes(b"a.txt\n\xff\xfe\n")
    os.symlink(tmp_path / "nowhere", tmp_path / "_deleted.jsonl")
    got = read_tombstones(tmp_path, "narrative")
    assert got.tombstones == []
    assert [(r.source_file, r.reason.split(":")[0]) for r in got.rejects] == [
        ("_deleted.txt", "invalid UTF-8 at byte 6"),
        ("_deleted.jsonl", "unreadable tombstone file"),
    ]


def test_readers_see_the_folder_without_tombstone_files(tmp_path: Path) -> None:
    day = tmp_path / "2026-11-24"
    (day / "sub").mkdir(parents=True)
    for f in (FIXTURES / "narrative").iterdir():
        (day / f.name).write_bytes(f.read_bytes())
    (day / "sub" / "_deleted.txt").write_text("nested files are ordinary input\n")
    plain = [p.relative_to(day).as_posix() for p in landing_files(day)]
    before = load_narrative_day(day)
    for name in TOMBSTONE_FILES:
        (day / name).write_text(json.dumps({"record_id": "x"}) + "\n")
    with landing_scope(day), without_tombstones(day) as folder:  # the raw step's scope: links lead into ``day``
        assert folder != day
        assert [p.relative_to(folder).as_posix() for p in landing_files(folder)] == plain
        got = load_narrative_day(folder)  # what the reader makes of it is what it made before the files came
        assert [(d.doc_id, d.source_file, d.text) for d in got.documents] == [
            (d.doc_id, d.source_file, d.text) for d in before.documents
        ]
        assert "sub/_deleted.txt" in {d.source_file for d in got.documents} and got.rejects == before.rejects
    assert not folder.exists()  # the mirror is gone, the landing untouched
    assert all((day / name).exists() for name in TOMBSTONE_FILES)
    with without_tombstones(tmp_path / "2026-12-01") as missing:  # no folder: passed through
        assert missing == tmp_path / "2026-12-01"
