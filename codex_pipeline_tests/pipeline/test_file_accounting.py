"""File accounting, pure: every landing file landed, rejected or skipped, or the day fails naming it."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.core.documents import Reject
from codex_pipeline.pipeline.file_accounting import (
    LANDED,
    REJECTED,
    SKIPPED,
    UNACCOUNTED,
    account_files,
    check_files,
)
from codex_pipeline.pipeline.row_accounting import RawDayFailed
from codex_pipeline.sources.tally import Tally

DAY = dt.date(2026, 11, 24)


def _day(tmp_path: Path, *names: str) -> Path:
    for n in names:
        (tmp_path / n).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / n).write_text("x")
    return tmp_path


def test_each_outcome_with_its_reason(tmp_path: Path) -> None:
    day = _day(tmp_path, "a.txt", "sub/b.pdf", "_deleted.txt", "empty.csv", "c.txt")
    acc = account_files(day, "documents", {"a.txt": 2}, [Reject("sub/b.pdf", "not a PDF: damaged")],
                        rows_read={"empty.csv": 0})
    got = {f.file: (f.outcome, f.documents, f.reason) for f in acc.files}
    assert got["a.txt"] == (LANDED, 2, None)
    assert got["sub/b.pdf"] == (REJECTED, 0, "not a PDF: damaged")
    assert got["_deleted.txt"][0] == SKIPPED and "tombstone" in got["_deleted.txt"][2]
    assert got["empty.csv"][:2] == (SKIPPED, 0) and "header" in got["empty.csv"][2]
    assert got["c.txt"][0] == UNACCOUNTED
    with pytest.raises(RawDayFailed, match=r"^documents 2026-11-24: c\.txt was read but neither landed, rejected nor skipped"):
        check_files(acc, "documents", DAY)
    assert acc.as_metadata() == {"files_found": 5, "files_landed": 1, "files_rejected": 1, "files_skipped": 2}
    table = acc.table(DAY)
    assert table.num_rows == 5 and table.column_names == ["partition_date", "file", "outcome", "documents", "reason"]


def test_a_thread_over_several_files_lands_each(tmp_path: Path) -> None:
    day = _day(tmp_path, "list.mbox", "reply.eml")
    acc = account_files(day, "email_threads", {"list.mbox, reply.eml": 1, "list.mbox": 2}, [])
    assert {f.file: f.documents for f in acc.files} == {"list.mbox": 3, "reply.eml": 1}
    check_files(acc, "email_threads", DAY)


def test_messages_read_must_be_threaded_plus_rejected(tmp_path: Path) -> None:
    day = _day(tmp_path, "list.mbox")
    rejects = [Reject("list.mbox", "broken MIME", "line 9"), Reject("list.mbox", "text before", "line 1", rows=0)]
    ok = account_files(day, "email_threads", {"list.mbox": 1}, rejects, messages={"list.mbox": [4, 3]})
    check_files(ok, "email_threads", DAY)
    assert ok.as_metadata()["messages_read"] == 4 and ok.as_metadata()["messages_rejected"] == 1
    lost = account_files(day, "email_threads", {"list.mbox": 1}, rejects, messages={"list.mbox": [5, 3]})
    with pytest.raises(RawDayFailed, match=r"list\.mbox: 5 message\(s\) read but 3 threaded and 1 rejected"):
        check_files(lost, "email_threads", DAY)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["landed", "rejected", "tombstone", "no_rows"]), max_size=12))
def test_found_is_landed_plus_rejected_plus_skipped(outcomes: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        day = Path(tmp)
        landed, rejects, rows = {}, [], {}
        names = []
        for i, o in enumerate(outcomes):
            name = "_deleted.txt" if o == "tombstone" else f"f{i}.csv"
            if name in names:
                continue
            names.append(name)
            (day / name).write_text("x")
            if o == "landed":
                landed[name] = i + 1
            elif o == "rejected":
                rejects.append(Reject(name, "bad"))
            elif o == "no_rows":
                rows[name] = 0
        acc = account_files(day, "d", landed, rejects, rows_read=rows)
        check_files(acc, "d", DAY)
        meta = acc.as_metadata()
        assert meta["files_found"] == len(names) == meta["files_landed"] + meta["files_rejected"] + meta["files_skipped"]
        assert meta["files_landed"] == len(landed) and meta["files_rejected"] == len(rejects)


def test_a_file_whose_rows_were_all_filtered_or_merged_is_skipped(tmp_path: Path) -> None:
    day = _day(tmp_path, "a.csv", "b.csv", "c.csv")
    tally = Tally()
    tally.update({"a.csv": 3, "b.csv": 4, "c.csv": 2})
    tally.filtered.update({"b.csv": 3, "c.csv": 1})
    tally.merged.update({"b.csv": 1})
    acc = account_files(day, "m", {"a.csv": 3}, [], rows_read=tally)
    got = {f.file: (f.outcome, f.reason) for f in acc.files}
    assert got["b.csv"] == (SKIPPED, "no row of its own landed: of 4 row(s) read, 3 left out by the mapping's "
                                     "filters and 1 merged into rows with the same id")
    assert got["c.csv"][0] == UNACCOUNTED  # one of its 2 rows is nowhere
    with pytest.raises(RawDayFailed, match="c.csv was read"):
        check_files(acc, "m", DAY)
