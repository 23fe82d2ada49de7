"""`codex inspect …` over a data dir materialized through real Dagster (civic + a re-landed narrative doc)."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import pytest

from codex_pipeline.cli.app import build_parser
from codex_pipeline.cli.inspect_commands import add_inspect_commands
from codex_pipeline.core.ids import make_chunk_id
from codex_pipeline.explore.inspector import ChunkInspector, token_histogram_png
from codex_pipeline.explore.navigation import ChunkCollection
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, land, materialize_dataset

DAY1, DAY2 = "2026-11-24", "2026-11-25"
COUNCIL = "urn:aprs:narrative:council-recess-statement.txt"
STATEMENT = (FIXTURES / "narrative" / "council-recess-statement.txt").read_text()


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """civic on day 1; narrative on day 1 (council statement long: 2 windows) and day 2 (re-landed short)."""
    root = tmp_path_factory.mktemp("inspect") / "data"
    wh = Warehouse(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CODEX_DATA_DIR", str(root))
        land(wh, "civic_intelligence", DAY1, FIXTURES / "civic_intelligence")
        assert materialize_dataset(wh, "civic_intelligence", DAY1).success
        day1 = land(wh, "narrative", DAY1, FIXTURES / "narrative" / "storm-drain-notice.html")
        (day1 / "council-recess-statement.txt").write_text("\n\n".join([STATEMENT] * 4))
        assert materialize_dataset(wh, "narrative", DAY1).success
        land(wh, "narrative", DAY2, FIXTURES / "narrative" / "council-recess-statement.txt")
        assert materialize_dataset(wh, "narrative", DAY2).success
    return wh


def run(wh: Warehouse | Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Through `codex`'s own parser; registers `inspect` on it until cli.py does so itself."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if "inspect" not in sub.choices:
        add_inspect_commands(sub)
    root = wh.root if isinstance(wh, Warehouse) else wh
    args = parser.parse_args(["--data-dir", str(root), "inspect", *argv])
    rc = args.func(args)
    out, err = capsys.readouterr()
    return rc, out, err


def civic_rows(wh: Warehouse) -> list[dict]:
    rows = wh.read("civic_intelligence", "chunks", dt.date.fromisoformat(DAY1)).to_pylist()
    return sorted(rows, key=lambda r: (r["doc_id"], r["seq_index"]))


# -- summary ------------------------------------------------------------------------


def test_summary(wh: Warehouse, capsys) -> None:
    rc, out, err = run(wh, capsys, "summary", "--dataset", "civic_intelligence")
    assert rc == 0 and err == ""
    rows = civic_rows(wh)
    expected = ChunkInspector(ChunkCollection.from_table(wh.read("civic_intelligence", "chunks", dt.date(2026, 11, 24))))
    assert out == str(expected.summary()) + "\n"
    docs = len({r["doc_id"] for r in rows})
    roots = sum(r["parent_chunk_id"] is None for r in rows)
    assert out.splitlines()[:2] == [
        "civic_intelligence: partition(s) 2026-11-24",
        f"  documents {docs} · chunks {len(rows)} · top-level chunks {roots} · over the 1,500-token cap 0",
    ]
    for t in {r["chunk_type"] for r in rows}:
        assert any(line.startswith(f"  {t} ") for line in out.splitlines())


def test_summary_latest_partition_per_document_and_by_date(wh: Warehouse, capsys) -> None:
    rc, out, _ = run(wh, capsys, "summary", "--dataset", "narrative")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == "narrative: partition(s) 2026-11-24, 2026-11-25"
    assert lines[1].startswith("  documents 2 · chunks 2 · ")  # council from day 2 (1 window), storm drain from day 1
    assert "  1 document(s) also in older partitions: latest partition shown" in lines
    rc, out, _ = run(wh, capsys, "summary", "--dataset", "narrative", "--date", DAY1)
    assert rc == 0 and out.splitlines()[1].startswith("  documents 2 · chunks 3 · ")
    rc, out, _ = run(wh, capsys, "summary", "--dataset", "narrative", "--date", DAY2)
    assert rc == 0 and out.splitlines()[1].startswith("  documents 1 · chunks 1 · ")


# -- one chunk, neighbours ----------------------------------------------------------


def test_chunk_prints_ids_type_section_tokens_anchor_parent_and_text(wh: Warehouse, capsys) -> None:
    child = next(r for r in civic_rows(wh) if r["parent_chunk_id"] and r["seq_index"] >= 2)
    rc, out, err = run(wh, capsys, "chunk", child["chunk_id"])
    assert rc == 0 and err == ""
    col = ChunkCollection.from_catalog(wh, "civic_intelligence")
    assert out == ChunkInspector(col.document_chunks(child["doc_id"])).read_chunk(child["chunk_id"]) + "\n"
    lines = out.splitlines()
    assert lines[0].endswith(child["chunk_id"])
    assert f"  section   {child['section_id']}" in lines and f"  type      {child['chunk_type']}" in lines
    assert f"  size      {child['token_count']} tokens · {len(child['chunk_text'])} chars" in lines
    assert f"  anchor    {child['evidence_anchor']}" in lines
    assert any(line.startswith(f"  parent    {child['parent_chunk_id']}  [") for line in lines)
    assert out.endswith("  ---\n" + child["chunk_text"] + "\n")
    # the same chunk by its content hash, and with the dataset named
    rc, by_hash, _ = run(wh, capsys, "chunk", child["content_hash"])
    assert rc == 0 and by_hash == out
    rc, named, _ = run(wh, capsys, "chunk", child["chunk_id"], "--dataset", "civic_intelligence", "--max-chars", "5")
    assert rc == 0 and named.splitlines()[-1] == child["chunk_text"][:5].rstrip() + f" … [+{len(child['chunk_text']) - 5} chars]"


def test_neighbours(wh: Warehouse, capsys) -> None:
    rows = civic_rows(wh)
    child = next(r for r in rows if r["parent_chunk_id"] and r["seq_index"] >= 2)
    same_doc = [r for r in rows if r["doc_id"] == child["doc_id"]]
    s = child["seq_index"]
    rc, out, err = run(wh, capsys, "neighbours", child["chunk_id"], "--before", "2", "--after", "1")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"document {child['doc_id']} · chunk {s + 1} of {len(same_doc)}"
    parent = next(r for r in rows if r["chunk_id"] == child["parent_chunk_id"])
    assert lines[1].startswith(f"parent   #{parent['seq_index']} [{parent['chunk_type']}] {parent['section_id']} ")
    before = [line for line in lines if line.startswith("  before ")]
    after = [line for line in lines if line.startswith("  after ")]
    assert [b.split()[1] for b in before] == [f"#{s - 2}", f"#{s - 1}"]
    assert [a.split()[1] for a in after] == [f"#{s + 1}"] if s + 1 < len(same_doc) else after == []
    assert f"> [{child['chunk_type']}] {child['chunk_id']}" in out
    children = [r for r in same_doc if r["parent_chunk_id"] == child["chunk_id"]]
    assert f"children ({len(children)})" in lines
    rc, alias, _ = run(wh, capsys, "neighbors", child["chunk_id"], "--before", "2", "--after", "1")
    assert rc == 0 and alias == out
    # the parent lists its children
    rc, out, _ = run(wh, capsys, "neighbours", parent["chunk_id"], "--before", "0", "--after", "0")
    kids = [r for r in same_doc if r["parent_chunk_id"] == parent["chunk_id"]]
    assert f"children ({len(kids)})" in out
    assert [line.split()[1] for line in out.splitlines() if line.startswith("  child ")] == [
        f"#{k['seq_index']}" for k in kids
    ]


def test_relanded_document_latest_wins_and_date_picks_a_day(wh: Warehouse, capsys) -> None:
    window0, window1 = make_chunk_id(COUNCIL, "window.0"), make_chunk_id(COUNCIL, "window.1")
    rc, out, _ = run(wh, capsys, "chunk", window0)
    assert rc == 0 and "partition 2026-11-25" in out and out.endswith("  ---\n" + STATEMENT + "\n")
    rc, out, _ = run(wh, capsys, "chunk", window0, "--date", DAY1)
    assert rc == 0 and "partition 2026-11-24" in out and "(seq 0, chunk 1 of 2)" in out
    # window.1 exists only in the day-1 version of the document
    rc, out, err = run(wh, capsys, "chunk", window1)
    assert rc == 2 and out == ""
    assert err == (
        f"codex inspect: {window1} is in {COUNCIL} only on 2026-11-24; its current version (landed "
        "2026-11-25) no longer has it: pass --date 2026-11-24\n"
    )
    rc, _, err = run(wh, capsys, "chunk", window1, "--history")  # the latest partition of every document: same
    assert rc == 2 and "its latest partition 2026-11-25 no longer has it: pass --date 2026-11-24" in err
    rc, out, _ = run(wh, capsys, "neighbours", window1, "--date", DAY1, "--before", "1")
    assert rc == 0 and out.splitlines()[0] == f"document {COUNCIL} · chunk 2 of 2"
    assert out.splitlines()[2].startswith("  before #0 [narrative_window] window.0 ")
    rc, _, err = run(wh, capsys, "chunk", window1, "--date", DAY2)
    assert rc == 2 and err == f"codex inspect: {window1} is in {COUNCIL} on 2026-11-24, not on 2026-11-25\n"


# -- sample, histogram --------------------------------------------------------------


def test_sample(wh: Warehouse, capsys) -> None:
    col = ChunkCollection.from_catalog(wh, "civic_intelligence")
    rc, out, err = run(wh, capsys, "sample", "--dataset", "civic_intelligence", "--n", "2", "--seed", "7")
    assert rc == 0 and err == ""
    assert out == ChunkInspector(col).sample_document(n=2, seed=7, max_chars=300) + "\n"
    rc, again, _ = run(wh, capsys, "sample", "--dataset", "civic_intelligence", "--n", "2", "--seed", "7")
    assert again == out
    doc = col.documents[-1]
    rc, out, _ = run(wh, capsys, "sample", "--dataset", "civic_intelligence", "--doc", doc, "--n", "50")
    assert rc == 0 and out.startswith(f"document {doc} · {len(col.document_chunks(doc))} chunk(s), all\n")
    rc, out, err = run(wh, capsys, "sample", "--dataset", "civic_intelligence", "--doc", "urn:aprs:civic_intelligence:x")
    assert rc == 2 and out == ""
    assert err.startswith(
        f"codex inspect: no document 'urn:aprs:civic_intelligence:x' in codex.civic_intelligence_chunks; "
        f"{len(col.documents)} document(s), e.g. {col.documents[0]}"
    )


def test_histogram(wh: Warehouse, capsys, tmp_path: Path) -> None:
    target = tmp_path / "civic.png"
    rc, out, err = run(wh, capsys, "histogram", "--dataset", "civic_intelligence", "--out", str(target))
    assert rc == 0 and err == ""
    png = target.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) < 100_000
    col = ChunkCollection.from_catalog(wh, "civic_intelligence")
    assert png == token_histogram_png(col, title="civic_intelligence")
    assert out == (
        f"wrote {target} ({len(png):,} bytes): token sizes of {len(col)} chunks "
        f"in {len(col.documents)} documents of civic_intelligence\n"
    )
    rc, out, _ = run(wh, capsys, "histogram", "--dataset", "narrative", "--date", DAY1, "--out", str(tmp_path / "n.png"))
    assert rc == 0 and out.endswith("token sizes of 3 chunks in 2 documents of narrative on 2026-11-24\n")
    rc, _, err = run(wh, capsys, "histogram", "--dataset", "narrative", "--out", str(tmp_path / "no" / "n.png"))
    assert rc == 2 and "does not exist" in err


# -- helpful errors -----------------------------------------------------------------


def test_no_catalog_yet_says_what_to_run(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "fresh"
    rc, out, err = run(empty, capsys, "summary", "--dataset", "civic_intelligence")
    assert rc == 2 and out == ""
    assert "no DuckDB catalog at" in err and "run `codex materialize YYYY-MM-DD`" in err and "codex demo" in err
    assert not (empty / "codex_catalog.duckdb").exists()  # inspecting never creates the catalog


def test_dataset_errors(wh: Warehouse, capsys) -> None:
    rc, _, err = run(wh, capsys, "summary", "--dataset", "nope")
    assert rc == 2 and err.startswith(
        "codex inspect: unknown dataset 'nope'; datasets with chunks in this catalog: civic_intelligence, narrative "
    )
    rc, _, err = run(wh, capsys, "summary", "--dataset", "ais_positions")
    assert rc == 2 and "'ais_positions' is not chunked (raw export only" in err
    rc, _, err = run(wh, capsys, "sample", "--dataset", "osha_safety")
    assert rc == 2 and "no chunks for dataset 'osha_safety' yet (no view codex.osha_safety_chunks" in err
    assert "run `codex materialize YYYY-MM-DD`" in err
    rc, _, err = run(wh, capsys, "summary", "--dataset", "civic_intelligence", "--date", "2026-12-01")
    assert rc == 2 and err == (
        "codex inspect: no chunks in codex.civic_intelligence_chunks for 2026-12-01; "
        "partitions with chunks: 2026-11-24\n"
    )
    rc, _, err = run(wh, capsys, "chunk", "urn:aprs:chunk:0000000000000000")
    assert rc == 2 and err == (
        "codex inspect: no chunk 'urn:aprs:chunk:0000000000000000' in any chunk view (civic_intelligence, narrative)\n"
    )
    rc, _, err = run(wh, capsys, "chunk", "item.4")
    assert rc == 2 and "chunk ids look like urn:aprs:chunk:<16 hex>" in err
    rc, _, err = run(wh, capsys, "neighbours", make_chunk_id(COUNCIL, "window.0"), "--dataset", "civic_intelligence")
    assert rc == 2 and "in codex.civic_intelligence_chunks" in err


def test_bad_arguments_are_usage_errors(wh: Warehouse, capsys) -> None:
    for argv, message in (
        (["summary"], "the following arguments are required: --dataset"),
        (["summary", "--dataset", "narrative", "--date", "2026-13-01"], "not a day: '2026-13-01' (expected YYYY-MM-DD)"),
        (["neighbours", "urn:aprs:chunk:0000000000000000", "--before", "-1"], "argument --before: must be >= 0"),
        (["histogram", "--dataset", "narrative"], "the following arguments are required: --out"),
    ):
        with pytest.raises(SystemExit) as exc:
            run(wh, capsys, *argv)
        assert exc.value.code == 2 and message in capsys.readouterr().err
