"""Issue 29, items 2 and 11: a landing folder cannot reach outside itself, and every entry ends in raw or rejects.

A hostile day folder (links leaving it, absolute and relative; a link inside it; folder links; hidden
files and folders; names with a newline, a tab, DEL and a C1 character; a fifo; a broken link; UTF-16
without a BOM) goes through a real Dagster materialization of ``narrative``. The union of the raw
rows' and the rejects' source files must be exactly the folder's entries, and nothing outside the
folder may be read unless ``CODEX_FOLLOW_LANDING_LINKS`` says so.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.files import landing_entries, read_text
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.step_settings import StepSettings
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import materialize_dataset

DAY = dt.date(2026, 11, 5)
SECRET = "The outside secret: wombat password hunter2 lives in this file."
GOOD = "The council met on Tuesday and approved the new bridge budget for the river crossing."


def hostile_folder(wh: Warehouse, outside: Path) -> Path:
    """A narrative landing day built to trick a reader; returns the folder."""
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET)
    (outside / "dir" / "also_secret.txt").write_text(SECRET)
    day = wh.landing_dir("narrative", DAY)
    (day / "sub").mkdir(parents=True)
    (day / ".git").mkdir()
    (day / "good.txt").write_text(GOOD)
    (day / "sub" / "nested.txt").write_text(GOOD + " Nested.")
    os.symlink("good.txt", day / "inside_link.txt")  # a link inside the folder: read
    os.symlink(outside / "secret.txt", day / "absolute_out.txt")
    os.symlink(os.path.relpath(outside / "secret.txt", day), day / "relative_out.txt")
    os.symlink(os.path.relpath(outside / "secret.txt", day / "sub"), day / "sub" / "deep_out.txt")
    os.symlink(outside / "dir", day / "folder_link")
    os.symlink("sub", day / "inside_folder_link")
    os.symlink("missing.txt", day / "broken.txt")
    (day / ".hidden.txt").write_text(GOOD)
    (day / ".git" / "config.txt").write_text(GOOD)
    for name in ("new\nline.txt", "tab\tname.txt", "del\x7fname.txt", "c1\x85name.txt", "bell\x07.txt",
                 "invoice\u202etxt.exe.txt", "iso\u2067late.txt"):
        (day / name).write_text(GOOD)
    os.mkfifo(day / "pipe.txt")
    (day / "utf16.txt").write_bytes(GOOD.encode("utf-16-le"))  # no BOM: valid UTF-8 full of NULs
    (day / "notes.pdf").write_bytes(b"%PDF-1.4")
    return day


def outcome(wh: Warehouse) -> tuple[set[str], dict[str, str], list[str]]:
    """(source files of raw rows, reason per rejected source file, raw texts) of the day."""
    con = connect_catalog(wh)
    try:
        raw = con.execute("SELECT source_file, canonical_text FROM codex.narrative_raw WHERE partition_date = ?",
                          [DAY]).fetchall()
        rejects = con.execute("SELECT source_file, reason FROM codex.narrative_rejects WHERE partition_date = ?",
                              [DAY]).fetchall()
    finally:
        con.close()
    assert len({f for f, _ in rejects}) == len(rejects), "one reject per entry"
    return {f for f, _ in raw}, dict(rejects), [t for _, t in raw]


def entries(day: Path) -> set[str]:
    return {p.relative_to(day).as_posix() for p in landing_entries(day)}


def test_every_entry_of_a_hostile_folder_ends_in_raw_or_rejects(warehouse: Warehouse, tmp_path: Path) -> None:
    day = hostile_folder(warehouse, tmp_path / "outside")
    assert materialize_dataset(warehouse, "narrative", DAY.isoformat()).success
    raw, rejects, texts = outcome(warehouse)
    assert raw | set(rejects) == entries(day) and not raw & set(rejects)
    assert raw == {"good.txt", "sub/nested.txt", "inside_link.txt"}
    assert not any("secret" in t for t in texts)
    for name in ("absolute_out.txt", "relative_out.txt", "sub/deep_out.txt"):
        assert "outside the landing day folder" in rejects[name] and "CODEX_FOLLOW_LANDING_LINKS" in rejects[name]
    assert "folder links are never followed" in rejects["folder_link"]
    assert "folder links are never followed" in rejects["inside_folder_link"]
    assert "hidden" in rejects[".hidden.txt"] and "hidden" in rejects[".git/config.txt"]
    for name, code in (("new\nline.txt", "000A"), ("tab\tname.txt", "0009"), ("del\x7fname.txt", "007F"),
                       ("c1\x85name.txt", "0085"), ("bell\x07.txt", "0007"),
                       ("invoice\u202etxt.exe.txt", "202E"), ("iso\u2067late.txt", "2067")):
        assert f"control character U+{code}" in rejects[name]
    assert "not a regular file" in rejects["pipe.txt"] and "not a regular file" in rejects["broken.txt"]
    assert "UTF-16" in rejects["utf16.txt"] and "NUL" in rejects["utf16.txt"]
    assert "unsupported file type" in rejects["notes.pdf"]


def test_links_leaving_the_folder_are_read_only_when_the_setting_says_so(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    warehouse = Warehouse(warehouse.root, StepSettings(follow_landing_links=True))
    day = hostile_folder(warehouse, tmp_path / "outside")
    assert materialize_dataset(warehouse, "narrative", DAY.isoformat()).success
    raw, rejects, texts = outcome(warehouse)
    assert raw | set(rejects) == entries(day)
    assert {"absolute_out.txt", "relative_out.txt", "sub/deep_out.txt"} <= raw
    assert "folder links are never followed" in rejects["folder_link"]  # folders: never, whatever the setting
    assert sum(SECRET in t for t in texts) == 3


def test_a_folder_of_tombstones_is_screened_through_its_mirror(warehouse: Warehouse, tmp_path: Path) -> None:
    """With a tombstone file the reader walks a mirror of links: links into the real folder are still read."""
    day = hostile_folder(warehouse, tmp_path / "outside")
    (day / "_deleted.txt").write_text("nothing-landed-yet.txt\n")
    assert materialize_dataset(warehouse, "narrative", DAY.isoformat()).success
    raw, rejects, texts = outcome(warehouse)
    assert raw == {"good.txt", "sub/nested.txt", "inside_link.txt"}
    assert (raw | set(rejects)) - {"_deleted.txt"} == entries(day) - {"_deleted.txt"}
    assert not any("secret" in t for t in texts)


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_text_without_a_byte_order_mark_is_rejected_naming_its_encoding(tmp_path: Path, encoding: str) -> None:
    (tmp_path / "minutes.txt").write_bytes(GOOD.encode(encoding))  # valid UTF-8, every other byte a NUL
    reject = read_text(tmp_path / "minutes.txt", tmp_path)
    assert isinstance(reject, Reject) and reject.source_file == "minutes.txt"
    assert "NUL bytes" in reject.reason and encoding.upper() in reject.reason and "re-save it as UTF-8" in reject.reason
    (tmp_path / "minutes.txt").write_bytes(GOOD.encode("utf-16"))  # with its byte-order mark: not UTF-8 at all
    assert isinstance(read_text(tmp_path / "minutes.txt", tmp_path), Reject)
    (tmp_path / "minutes.txt").write_text(GOOD)
    assert read_text(tmp_path / "minutes.txt", tmp_path) == GOOD


def test_a_tombstone_file_leading_outside_is_rejected_not_read(warehouse: Warehouse, tmp_path: Path) -> None:
    """``_deleted.txt`` as a link to a file elsewhere: a reject naming the target; no line of it is read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\ngood.txt\n")
    day = warehouse.landing_dir("narrative", DAY)
    day.mkdir(parents=True)
    (day / "good.txt").write_text(GOOD)
    os.symlink(outside / "passwd", day / "_deleted.txt")
    assert materialize_dataset(warehouse, "narrative", DAY.isoformat()).success
    raw, rejects, _ = outcome(warehouse)
    assert raw == {"good.txt"}  # not retracted by a line of the outside file
    assert set(rejects) == {"_deleted.txt"} and "outside the landing day folder" in rejects["_deleted.txt"]


def test_a_day_folder_that_is_a_symlink_is_one_named_reject_and_nothing_is_read(
    warehouse: Warehouse, tmp_path: Path
) -> None:
    """Issue 40 item 7: ``landing/<dataset>/<day> -> anywhere`` lands nothing; one reject names the folder and the fix."""
    outside = tmp_path / "anywhere"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "_deleted.txt").write_text("secret.txt\n")
    day = warehouse.landing_dir("narrative", DAY)
    day.parent.mkdir(parents=True)
    os.symlink(outside, day)
    assert materialize_dataset(warehouse, "narrative", DAY.isoformat()).success
    raw, rejects, _ = outcome(warehouse)
    assert raw == set() and set(rejects) == {"."}
    reason = rejects["."]
    assert "\n" not in reason and str(day) in reason and "is a symlink to" in reason
    assert "real folder" in reason and "CODEX_FOLLOW_LANDING_LINKS" in reason


def test_a_day_folder_link_is_followed_when_the_setting_says_so(warehouse: Warehouse, tmp_path: Path) -> None:
    warehouse = Warehouse(warehouse.root, StepSettings(follow_landing_links=True))
    outside = tmp_path / "anywhere"
    outside.mkdir()
    (outside / "good.txt").write_text(GOOD)
    day = warehouse.landing_dir("narrative", DAY)
    day.parent.mkdir(parents=True)
    os.symlink(outside, day)
    assert materialize_dataset(warehouse, "narrative", DAY.isoformat()).success
    raw, rejects, _ = outcome(warehouse)
    assert raw == {"good.txt"} and rejects == {}


def test_a_hard_link_to_a_file_outside_the_folder_is_rejected_by_name(warehouse: Warehouse, tmp_path: Path) -> None:
    """A hard link has no target to resolve: its other names are counted, and one outside the folder is a reject."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    day = warehouse.landing_dir("narrative", DAY)
    (day / "sub").mkdir(parents=True)
    (day / "good.txt").write_text(GOOD)
    os.link(outside / "secret.txt", day / "linked.txt")  # a second name for a file outside
    os.link(day / "good.txt", day / "sub" / "twin.txt")  # both names inside the folder: read
    assert materialize_dataset(warehouse, "narrative", DAY.isoformat()).success
    raw, rejects, texts = outcome(warehouse)
    assert raw == {"good.txt", "sub/twin.txt"} and set(rejects) == {"linked.txt"}
    assert not any("secret" in t for t in texts)
    reason = rejects["linked.txt"]
    assert "hard link" in reason and "1 of them outside the landing day folder" in reason
    assert "cp, not ln" in reason and "CODEX_FOLLOW_LANDING_LINKS" in reason
