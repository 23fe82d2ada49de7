"""A Parquet file replaced while `codex search` read it (a run of the same day publishing) is read again, once.

Found by ``bench/bench_faults.py``: one search in 65 run during a materialization of the same day
failed with ``TProtocolException: Invalid data`` (a footer read from one file, pages from its
replacement). The read the search makes is the library's; here it fails the way pyarrow does, once
or for good.
"""

from __future__ import annotations

import pytest

from codex_pipeline.retrieval import Retriever
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.cli.test_cli_errors_search import assert_one_line, built, codex, wh  # noqa: F401

REPLACED = OSError("Couldn't deserialize thrift: TProtocolException: Invalid data")


def _failing(times: int, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = Retriever.search

    def search(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) <= times:
            raise REPLACED
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Retriever, "search", search)
    return calls


def test_a_file_replaced_under_the_search_is_read_again(wh: Warehouse, capsys, monkeypatch) -> None:  # noqa: F811
    calls = _failing(1, monkeypatch)
    rc, err = codex(capsys, wh, "search", "--mode", "bm25", "water main")
    assert rc == 0, err
    assert len(calls) == 2


def test_a_file_that_stays_unreadable_is_one_line(wh: Warehouse, capsys, monkeypatch) -> None:  # noqa: F811
    calls = _failing(5, monkeypatch)
    rc, err = codex(capsys, wh, "search", "--mode", "bm25", "water main")
    assert_one_line(rc, err, "codex search:", "TProtocolException")
    assert len(calls) == 2  # one retry, not a loop
