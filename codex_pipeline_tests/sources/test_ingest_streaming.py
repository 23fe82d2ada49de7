"""CSV read page by page gives what reading it whole gives; a mapped day streams with the same documents.

Pages (:func:`iter_csv_pages`, small blocks so that records and lines straddle them) must hold
the same rows, refs (physical line numbers), rejects and row counts as :func:`read_csv_file`,
on generated files with stray quotes, short and long rows, CRLF, a BOM, blank lines, bad
bytes and quoted line breaks. A mapped dataset's ``iter_day`` must give ``load_day``'s
documents and rejects, with duplicates across pages rejected naming the first.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources import csv_rows
from codex_pipeline.sources.csv_rows import CsvFile, iter_csv_pages, read_csv_file
from codex_pipeline.sources.mapping.kinds import kind_parts, load_mapped_dataset
from codex_pipeline.sources.mapping.stream import FirstSeen, iter_mapped_day
from codex_pipeline.sources.records import RawRecord, dedupe_by
from codex_pipeline.sources.tally import counting_rows

HEADER = ["id", "status", "desc"]
CELL = st.text(st.sampled_from('ab ,"\n\r\té'), max_size=6)
GOOD = st.lists(CELL, min_size=3, max_size=3)
DAMAGED = st.sampled_from([
    'P9,"open,never closed',  # a stray quote
    "P9,open",  # short
    "P9,open,x,y",  # long
    "",  # blank
    'P9,op"en,x',  # a quote inside an unquoted cell
    "\udcff",  # a byte that is not UTF-8 (written as 0xff)
])


def _whole_and_paged(path: Path, page_rows: int, block_bytes: int, **kw: str) -> tuple[CsvFile, CsvFile, int]:
    whole = read_csv_file(path, path.parent, max_bytes=1 << 40, **kw)
    joined = CsvFile(whole.rel)
    pages = 0
    for page in iter_csv_pages(path, path.parent, page_rows=page_rows, block_bytes=block_bytes, **kw):
        pages += 1
        assert page.rel == whole.rel and page.header == whole.header and page.renamed == whole.renamed
        assert len(page.rows) == len(page.refs)
        joined.rows += page.rows
        joined.refs += page.refs
        joined.rejects += page.rejects
        joined.rows_read += page.rows_read
    return whole, joined, pages


def _same(whole: CsvFile, joined: CsvFile) -> None:
    assert joined.rows == whole.rows
    assert joined.refs == whole.refs
    assert joined.rejects == whole.rejects
    assert joined.rows_read == whole.rows_read


def _file_bytes(lines: list[list[str] | str], crlf: bool, bom: bool) -> bytes:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n" if crlf else "\n")
    w.writerow(HEADER)
    for i, line in enumerate(lines):
        if isinstance(line, list):
            w.writerow([f"P{i}", *line[1:]])
        else:
            out.write(line + ("\r\n" if crlf else "\n"))
    data = out.getvalue().encode("utf-8", "surrogateescape")
    return (b"\xef\xbb\xbf" if bom else b"") + data


@settings(max_examples=120, deadline=None)
@given(lines=st.lists(st.one_of(GOOD, DAMAGED), max_size=40), crlf=st.booleans(), bom=st.booleans(),
       page_rows=st.integers(1, 7), block_bytes=st.sampled_from([1, 7, 64, 1 << 20]), last_nl=st.booleans())
def test_pages_equal_the_whole_file(tmp_path_factory: pytest.TempPathFactory, lines: list[list[str] | str],
                                    crlf: bool, bom: bool, page_rows: int, block_bytes: int, last_nl: bool) -> None:
    data = _file_bytes(lines, crlf, bom)
    if not last_nl:
        data = data.rstrip(b"\r\n")
    path = tmp_path_factory.mktemp("csv") / "export.csv"
    path.write_bytes(data)
    with mock.patch.object(csv_rows, "DROP_LINES", 1):  # parsed lines dropped at every page, as in a big file
        whole, joined, _ = _whole_and_paged(path, page_rows, block_bytes)
    _same(whole, joined)


@pytest.mark.parametrize("data", [
    b"", b"\n\n", b"id,status\n", "id,ç\nP1,é\n".encode("latin-1"), b"\xff\xfei\x00d\x00\n\x00", b"id\x00,x\nP1,2\n",
    b"id,status\rP1,a\rP2,b\r", b"id,id,status\nP1,a,b\n", b"\xef\xbb\xbfid,status\nP1,a\n",
])
def test_odd_files_page_like_whole(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "export.csv"
    path.write_bytes(data)
    whole, joined, _ = _whole_and_paged(path, 2, 3)
    _same(whole, joined)
    assert [r.reason for r in joined.rejects] == [r.reason for r in whole.rejects]


def test_latin1_encoding_pages(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_bytes(b"id,name\n" + b"".join(f"P{i},caf\xe9 {i}\n".encode("latin-1") for i in range(50)))
    whole, joined, pages = _whole_and_paged(path, 10, 100, encoding="latin-1")
    _same(whole, joined)
    assert pages > 4 and joined.rows[3]["name"] == "café 3"


def test_many_pages_land_every_row(tmp_path: Path) -> None:
    """60,000 rows with a stray quote and a short row in the middle: every row is a row or a reject,
    the refs are the physical lines, the pages hold ~page_rows each."""
    n = 60_000
    body = [f"P{i},open,\"line one\nline two {i}\"" if i % 1000 == 0 else f"P{i},open,row {i}" for i in range(n)]
    body[30_000] = 'P30000,"stray'
    body[30_001] = "P30001,short"
    path = tmp_path / "export.csv"
    path.write_text("id,status,desc\n" + "\n".join(body) + "\n", encoding="utf-8")
    sizes = []
    got = CsvFile("export.csv")
    for page in iter_csv_pages(path, tmp_path, page_rows=5000, block_bytes=1 << 16):
        sizes.append(len(page.rows) + len(page.rejects))
        got.rows += page.rows
        got.refs += page.refs
        got.rejects += page.rejects
        got.rows_read += page.rows_read
    assert got.rows_read == n == len(got.rows) + len(got.rejects)
    assert len(sizes) == 12 and max(sizes) <= 5001
    assert [r.record_ref for r in got.rejects] == ["row 30032", "row 30033"]  # 30 two-line records before them
    assert got.refs[1000] == "row 1003" and got.rows[1000]["desc"] == "line one\nline two 1000"


MAPPING = """\
codex_mapping: 1
dataset: stream_probe
title: Stream probe
kind: record
format: csv
id: ID
fields:
  name: NAME
  amount:
    column: AMOUNT
    type: number
"""


def test_mapped_day_streams_like_load_day(tmp_path: Path) -> None:
    """Documents equal ``load_day``'s in order; rejects the same set (duplicates across pages name the first)."""
    (tmp_path / "m.yaml").write_text(MAPPING, encoding="utf-8")
    md = load_mapped_dataset(tmp_path / "m.yaml")
    assert md.streams and md.iter_day is not None
    day = tmp_path / "day"
    day.mkdir()
    rows = [f"R{i},name {i},{i}.5" for i in range(1, 40)] + ["R3,again,1", "R40,bad,lots", "R41,short"]
    (day / "a.csv").write_text("ID,NAME,AMOUNT\n" + "\n".join(rows) + "\n", encoding="utf-8")
    (day / "b.csv").write_text("ID,NAME,AMOUNT\nR5,in b,2\nR99,new,3\n", encoding="utf-8")
    whole = md.load_day(day)
    rejects: list[Reject] = []
    with counting_rows() as tally:
        docs = list(iter_mapped_day(kind_parts(md.mapping, md.name), md.mapping, md.name, day, rejects, page_rows=4))
    assert docs == whole.documents
    assert sorted(map(repr, rejects)) == sorted(map(repr, whole.rejects))
    assert tally == {"a.csv": 42, "b.csv": 2}
    dup = next(r for r in rejects if r.record_ref == "row 41")
    assert dup.reason == "duplicate record id 'R3' (first at a.csv row 4)"


def test_a_whole_file_header_reject_stands_for_every_page(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(MAPPING, encoding="utf-8")
    md = load_mapped_dataset(tmp_path / "m.yaml")
    day = tmp_path / "day"
    day.mkdir()
    (day / "a.csv").write_text("ID,NAME\n" + "".join(f"R{i},n\n" for i in range(10)), encoding="utf-8")
    rejects: list[Reject] = []
    docs = list(iter_mapped_day(kind_parts(md.mapping, md.name), md.mapping, md.name, day, rejects, page_rows=3))
    assert docs == [] and rejects == md.load_day(day).rejects
    assert rejects[0].rows == 10 and "all 10 rows" in rejects[0].reason


@pytest.mark.slow
def test_a_file_over_64_mib_lands_every_row(tmp_path: Path) -> None:
    """No size cap on a streamed CSV: a ~70 MiB export lands whole, in pages."""
    line = "P{},open," + "x" * 200 + "\n"
    n = (70 << 20) // len(line.format(0))
    path = tmp_path / "export.csv"
    with path.open("w", encoding="utf-8") as f:
        f.write("id,status,desc\n")
        for i in range(n):
            f.write(line.format(i))
    assert path.stat().st_size > 64 << 20
    rows = rejects = pages = 0
    last = ""
    for page in iter_csv_pages(path, tmp_path):
        pages += 1
        rows += len(page.rows)
        rejects += len(page.rejects)
        last = page.refs[-1] if page.refs else last
    assert rows == n and rejects == 0 and pages >= n // 5000 and last == f"row {n + 1}"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a.csv", "b/c.csv"]), st.sampled_from(["row 2", "row 70000", "line 3", "row x"]),
                          st.sampled_from(["R1", "R2", "R3", "7"])), max_size=30), st.integers(1, 5))
def test_first_seen_finds_what_dedupe_by_finds(items: list[tuple[str, str, str]], page: int) -> None:
    """Across pages, :class:`FirstSeen` keeps and rejects what one ``dedupe_by`` over the day does."""
    records = [RawRecord(f, ref, {"id": rid}) for f, ref, rid in items]
    want = dedupe_by(records, lambda r: str(r.data["id"]), "record id")
    seen = FirstSeen()
    keep: list[RawRecord] = []
    rejects: list[Reject] = []
    for i in range(0, len(records), page):
        k, r = seen.dedupe(records[i:i + page], "id")
        keep += k
        rejects += r
    assert (keep, rejects) == want


FEATURES = MAPPING + """\
  score:
    column: SCORE
    type: integer
    optional: true
filters: [{column: NAME, not_in: [skip]}]
"""


def test_filters_and_optional_notes_stream_like_load_day(tmp_path: Path) -> None:
    """Rows left out by filters are counted per file across pages; optional-field notes are the same."""
    (tmp_path / "m.yaml").write_text(FEATURES, encoding="utf-8")
    md = load_mapped_dataset(tmp_path / "m.yaml")
    assert md.streams
    day = tmp_path / "day"
    day.mkdir()
    rows = [f"R{i},{'skip' if i % 4 == 0 else f'name {i}'},{i},{'x' if i % 5 == 0 else i}" for i in range(1, 30)]
    (day / "a.csv").write_text("ID,NAME,AMOUNT,SCORE\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with counting_rows() as whole_tally:
        whole = md.load_day(day)
    rejects: list[Reject] = []
    with counting_rows() as tally:
        docs = list(iter_mapped_day(kind_parts(md.mapping, md.name), md.mapping, md.name, day, rejects, page_rows=4))
    assert docs == whole.documents and len(docs) == 22
    assert sorted(map(repr, rejects)) == sorted(map(repr, whole.rejects))
    assert dict(tally) == dict(whole_tally) == {"a.csv": 29}
    assert tally.filtered == whole_tally.filtered == {"a.csv": 7}


def test_duplicates_last_or_merge_load_whole(tmp_path: Path) -> None:
    for mode in ("last", "merge"):
        (tmp_path / "m.yaml").write_text(MAPPING + f"duplicates: {{mode: {mode}}}\n", encoding="utf-8")
        md = load_mapped_dataset(tmp_path / "m.yaml")
        assert not md.streams and md.iter_day is None
