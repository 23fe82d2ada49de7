"""Row accounting: read = landed + rejected per file, and ``max_reject_ratio`` on the day."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codex_pipeline.core.documents import Reject
from codex_pipeline.pipeline.row_accounting import RawDayFailed, account_rows, check_rows
from codex_pipeline.sources.tally import count_filtered, count_merged, count_rows, counting_rows

DAY = dt.date(2026, 11, 24)


def test_files_are_counted_from_documents_and_ingest_rejects() -> None:
    rejects = [Reject("a.csv", "short", "row 3"), Reject("a.csv", "header", rows=4), Reject("b.csv", "x", "row 2"),
               Reject("a.csv", "chunker failed", "P1", stage="chunk"), Reject("notes.txt", "unsupported file type")]
    acc = account_rows({"a.csv": 7, "b.csv": 3}, {"a.csv": 2, "b.csv": 2}, rejects)
    assert [(f.file, f.read, f.landed, f.rejected) for f in acc.files] == [("a.csv", 7, 2, 5), ("b.csv", 3, 2, 1)]
    assert acc.as_metadata() == {"rows_read": 10, "rows_landed": 4, "rows_rejected": 6, "rows_merged": 0,
                                 "rows_filtered": 0}
    assert acc.markdown().splitlines()[2] == "| a.csv | 7 | 2 | 5 | 0 | 0 |"
    check_rows(acc, "ds", DAY, None)  # balanced, no ratio: passes


def test_a_row_unaccounted_for_fails_naming_the_file() -> None:
    acc = account_rows({"a.csv": 10}, {"a.csv": 2}, [Reject("a.csv", "stray quote", "row 5")])
    with pytest.raises(RawDayFailed) as err:
        check_rows(acc, "permits", DAY, None)
    assert str(err.value).startswith("permits 2026-11-24: a.csv: 10 row(s) read but 2 landed, 1 rejected, "
                                     "0 merged and 0 filtered (7 unaccounted for)")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("landed", "rejected", "ratio", "fails"), [
    (5, 5, 0.5, False), (4, 6, 0.5, True), (0, 10, 1.0, True), (9, 1, 0.0, True), (10, 0, 0.0, False)])
def test_the_reject_ratio(landed: int, rejected: int, ratio: float, fails: bool) -> None:
    acc = account_rows({"a.csv": 10}, {"a.csv": landed}, [Reject("a.csv", "bad", rows=rejected)] if rejected else [])
    if not fails:
        check_rows(acc, "ds", DAY, ratio)
        return
    with pytest.raises(RawDayFailed) as err:
        check_rows(acc, "ds", DAY, ratio)
    line = str(err.value)
    assert line.startswith(f"ds 2026-11-24: {rejected} of 10 row(s) rejected ({rejected / 10:.0%}), ")
    assert "codex.ds_rejects" in line and "\n" not in line
    assert ("none landed" in line) == (landed == 0)


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=6))
def test_balanced_files_pass_and_their_totals_add_up(files: list[tuple[int, int]]) -> None:
    tally = {f"f{i}.csv": a + b for i, (a, b) in enumerate(files)}
    landed = {f"f{i}.csv": a for i, (a, _) in enumerate(files)}
    rejects = [Reject(f"f{i}.csv", "bad", f"row {k + 2}") for i, (_, b) in enumerate(files) for k in range(b)]
    acc = account_rows(tally, landed, rejects)
    check_rows(acc, "ds", DAY, None)
    assert acc.read == acc.landed + acc.rejected == sum(tally.values())


def _tally(read: int, merged: int, filtered: int) -> dict[str, int]:
    with counting_rows() as tally:
        count_rows("a.csv", read)
        count_merged("a.csv", merged)
        count_filtered("a.csv", filtered)
    return tally


def test_merged_and_filtered_rows_are_accounted_for_and_not_rejects() -> None:
    acc = account_rows(_tally(10, 3, 2), {"a.csv": 4}, [Reject("a.csv", "bad", "row 2"),
                                                        Reject("a.csv", "nulled", "row 3", stage="note")])
    assert [(f.read, f.landed, f.rejected, f.merged, f.filtered) for f in acc.files] == [(10, 4, 1, 3, 2)]
    assert acc.as_metadata() == {"rows_read": 10, "rows_landed": 4, "rows_rejected": 1, "rows_merged": 3,
                                 "rows_filtered": 2}
    assert acc.markdown().splitlines()[2] == "| a.csv | 10 | 4 | 1 | 3 | 2 |"
    check_rows(acc, "ds", DAY, 0.2)  # 1 of 8 judged rows (filtered ones left out): under 0.2
    short = account_rows(_tally(10, 3, 2), {"a.csv": 3}, [Reject("a.csv", "bad", "row 2")])
    with pytest.raises(RawDayFailed, match=r"3 landed, 1 rejected, 3 merged and 2 filtered \(1 unaccounted for\)"):
        check_rows(short, "ds", DAY, None)


def test_filtered_rows_do_not_count_towards_the_reject_ratio() -> None:
    acc = account_rows(_tally(10, 0, 6), {"a.csv": 2}, [Reject("a.csv", "bad", rows=2)])
    with pytest.raises(RawDayFailed, match=r"2 of 4 row\(s\) rejected \(50%\), over max_reject_ratio \(0.4\)"):
        check_rows(acc, "ds", DAY, 0.4)
    check_rows(account_rows(_tally(5, 0, 5), {}, []), "ds", DAY, 0.0)  # every row filtered: nothing to judge


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50), st.integers(0, 50), st.integers(0, 50)),
                min_size=1, max_size=4))
def test_the_four_outcomes_always_balance(files: list[tuple[int, int, int, int]]) -> None:
    with counting_rows() as tally:
        for i, (_landed, _rejected, merged, filtered) in enumerate(files):
            count_rows(f"f{i}.csv", sum(files[i]))
            count_merged(f"f{i}.csv", merged)
            count_filtered(f"f{i}.csv", filtered)
    acc = account_rows(tally, {f"f{i}.csv": f[0] for i, f in enumerate(files)},
                       [Reject(f"f{i}.csv", "bad", rows=f[1]) for i, f in enumerate(files) if f[1]])
    assert all(f.balanced for f in acc.files)
    assert acc.read == acc.landed + acc.rejected + acc.merged + acc.filtered
