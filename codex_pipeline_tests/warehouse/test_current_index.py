"""The document index behind the current views: fold, order independence, concurrency, views.

The fold is checked against a brute-force model of the rule (latest landing by day,
deleted by a later tombstone or a later full snapshot) over random histories applied
in random order, reruns included.
"""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing as mp
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from codex_pipeline.core.contract import CHUNK_SCHEMA
from codex_pipeline.core.ids import make_chunk_id, make_doc_id
from codex_pipeline.warehouse.catalog import connect_catalog, ensure_views
from codex_pipeline.warehouse.current import (
    LANDINGS_FILE,
    check_unique_chunk_ids,
    ensure_index,
    tombstones_table,
    update_index,
)
from codex_pipeline.warehouse.storage import Warehouse

DS = "manual"
DAY0 = dt.date(2026, 11, 1)


def day(i: int) -> dt.date:
    return DAY0 + dt.timedelta(days=i)


def landed(*records: str) -> pa.Table:
    return pa.table(
        {
            "doc_id": pa.array([make_doc_id(DS, r) for r in records], pa.string()),
            "record_id": pa.array(list(records), pa.string()),
            "source_file": pa.array([f"{r}.txt" for r in records], pa.string()),
        }
    )


def tombs(*records: str) -> pa.Table:
    return pa.table({"record_id": pa.array(list(records), pa.string()),
                     "source_file": pa.array(["_deleted.txt"] * len(records), pa.string())})


def documents(wh: Warehouse) -> dict[str, dict]:
    return {r["record_id"]: r for r in pq.read_table(wh.documents_path(DS)).to_pylist()}


# -- the fold against a brute-force model ------------------------------------------------


def reference(land: dict[int, set[str]], dead: dict[int, set[str]], snapshot: bool) -> dict[str, tuple]:
    """record -> (current day, landing days, deleted_on, deleted_by), straight from the rule."""
    out = {}
    snaps = sorted(d for d, rs in land.items() if rs) if snapshot else []
    for r in sorted(set().union(*land.values()) if land else set()):
        days = sorted(d for d, rs in land.items() if r in rs)
        latest = days[-1]
        by_t = min((d for d, rs in dead.items() if r in rs and d > latest), default=None)
        by_s = min((d for d in snaps if d > latest), default=None)
        gone = min(x for x in (by_t, by_s) if x is not None) if by_t is not None or by_s is not None else None
        how = None if gone is None else ("tombstone" if by_t is not None and (by_s is None or by_t <= by_s) else "snapshot")
        out[r] = (day(latest), [day(d) for d in days], day(gone) if gone is not None else None, how)
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("snapshot", [False, True])
def test_fold_matches_the_rule_whatever_the_order(tmp_path: Path, seed: int, snapshot: bool) -> None:
    rng = random.Random(seed)
    records = [f"r{k}" for k in range(12)]
    n_days = 8
    land = {d: set(rng.sample(records, rng.randint(0, 6))) for d in range(n_days)}
    dead = {d: set(rng.sample(records, rng.randint(0, 3))) - land[d] for d in range(n_days)}
    # every day's landings and tombstones, in a shuffled order, some first with a wrong version (a rerun fixes it)
    steps = [(d, "land", land[d]) for d in range(n_days)] + [(d, "tomb", dead[d]) for d in range(n_days)]
    wrong = [(d, kind, set(rng.sample(records, 3))) for d, kind, _ in rng.sample(steps, 4)]
    order = wrong + steps
    rng.shuffle(order)
    order.sort(key=lambda s: s in steps)  # the wrong versions first, then every true one, each shuffled
    wh = Warehouse(tmp_path)
    for d, kind, rs in order:
        rs = sorted(rs)
        if kind == "land":
            update_index(wh, DS, day(d), landed=landed(*rs), snapshot=snapshot)
        else:
            update_index(wh, DS, day(d), tombstones=tombs(*rs), snapshot=snapshot)
    got = {r: (v["partition_date"], v["landed_on"], v["deleted_on"], v["deleted_by"]) for r, v in documents(wh).items()}
    assert got == reference(land, dead, snapshot)
    unknown = wh.table_dir(DS, "rejects") / "unknown_tombstones.parquet"
    expected = sorted(
        (day(d), r) for d, rs in dead.items() for r in rs if not any(r in land[e] for e in range(d))
    )
    rows = pq.read_table(unknown).to_pylist() if unknown.exists() else []
    assert sorted((x["partition_date"], x["record_ref"]) for x in rows) == expected
    assert all(x["stage"] == "tombstone" and "unknown record id" in x["reason"] for x in rows)


def test_an_older_day_landed_later_never_becomes_current(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    update_index(wh, DS, day(5), landed=landed("a"))
    update_index(wh, DS, day(2), landed=landed("a", "b"))  # backfilled afterwards
    docs = documents(wh)
    assert docs["a"]["partition_date"] == day(5) and docs["a"]["landed_on"] == [day(2), day(5)]
    assert docs["b"]["partition_date"] == day(2)


def test_an_empty_snapshot_day_deletes_nothing(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    update_index(wh, DS, day(0), landed=landed("a", "b"), snapshot=True)
    change = update_index(wh, DS, day(1), landed=landed(), snapshot=True)  # nothing landed: not a snapshot
    assert change.deleted == 0 and change.documents == 2
    change = update_index(wh, DS, day(2), landed=landed("a"), snapshot=True)
    assert change.newly_deleted == (make_doc_id(DS, "b"),) and documents(wh)["b"]["deleted_by"] == "snapshot"


def _concurrent_update(root: str, i: int) -> None:
    update_index(Warehouse(root), DS, day(i), landed=landed(f"r{i}", "shared"))


def test_concurrent_runs_of_different_days_lose_no_event(tmp_path: Path) -> None:
    with mp.get_context("spawn").Pool(4) as pool:
        pool.starmap(_concurrent_update, [(str(tmp_path), i) for i in range(12)])
    docs = documents(Warehouse(tmp_path))
    assert set(docs) == {f"r{i}" for i in range(12)} | {"shared"}
    assert docs["shared"]["landed_on"] == [day(i) for i in range(12)] and docs["shared"]["partition_date"] == day(11)
    log = pq.read_table(Warehouse(tmp_path).index_dir(DS) / LANDINGS_FILE)
    assert log.num_rows == 24
    leftovers = [p.name for p in Warehouse(tmp_path).index_dir(DS).iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


# -- chunk files: deleted redirects, rebuild, views ------------------------------------


def chunk_table(when: dt.date, docs: dict[str, int], version: str = "1.0") -> pa.Table:
    """``docs``: record id -> number of chunks; a root chunk and its children, text naming the day."""
    rows = []
    for r, n in docs.items():
        doc = make_doc_id(DS, r)
        for k in range(n):
            sid = "root" if k == 0 else f"root.{k}"
            text = f"{r} part {k} as landed on {when}"
            rows.append({
                "chunk_id": make_chunk_id(doc, sid), "doc_id": doc, "section_id": sid, "chunk_text": text,
                "chunk_type": "doc_section", "token_count": 5, "char_count": len(text), "seq_index": k,
                "parent_chunk_id": None if k == 0 else make_chunk_id(doc, "root"),
                "evidence_anchor": '{"page":null,"char_span":[0,1]}', "embedding_model": None,
                "embedding_version": None, "chunked_at": dt.datetime(2026, 11, 1, tzinfo=dt.UTC),
                "chunking_version": version, "dataset": DS, "partition_date": when,
                "locator": f"{doc}|r=00000000|s={sid}|p=000|b=000", "content_hash": "0" * 64, "metadata": None,
            })
    return pa.Table.from_pylist(rows, schema=CHUNK_SCHEMA)


def publish(wh: Warehouse, i: int, docs: dict[str, int]) -> None:
    """What the chunks asset does for a day: write its chunks, then record its landings."""
    wh.write(chunk_table(day(i), docs), DS, "chunks", day(i))
    raw = landed(*docs)
    n = raw.num_rows
    wh.write(raw.append_column("partition_date", pa.array([day(i)] * n, pa.date32())), DS, "raw", day(i))
    update_index(wh, DS, day(i), landed=raw)


def test_deleted_documents_get_redirect_rows_until_they_land_again(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    publish(wh, 0, {"a": 3, "b": 2})
    publish(wh, 1, {"a": 1})  # a re-landed shorter: its current version has one chunk
    change = update_index(wh, DS, day(2), tombstones=tombs("a"))
    assert change.newly_deleted == (make_doc_id(DS, "a"),) and change.deleted_chunk_ids == 1
    rows = pq.read_table(wh.table_dir(DS, "redirects") / "deleted.parquet").to_pylist()
    assert [(r["old_chunk_id"], r["new_chunk_id"], r["match"], r["partition_date"]) for r in rows] == [
        (make_chunk_id(make_doc_id(DS, "a"), "root"), None, "deleted", day(1))
    ]
    assert wh.partitions(DS, "redirects") == {}  # not a day: per-day redirect bookkeeping never sees it
    publish(wh, 3, {"a": 2})  # landed again
    assert pq.read_table(wh.table_dir(DS, "redirects") / "deleted.parquet").num_rows == 0  # kept: a view may glob it
    assert documents(wh)["a"]["deleted_on"] is None


def test_index_is_rebuilt_from_the_partitions_when_missing(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    publish(wh, 0, {"a": 2, "b": 1})
    publish(wh, 2, {"b": 1})
    wh.write(tombstones_table(day(3), [_T("a", "_deleted.txt", 1)]), DS, "tombstones", day(3))
    update_index(wh, DS, day(3), tombstones=tombstones_table(day(3), [_T("a", "_deleted.txt", 1)]))
    before = documents(wh)
    for p in wh.index_dir(DS).glob("*.parquet"):
        p.unlink()
    assert ensure_index(wh, DS) and not ensure_index(wh, DS)
    assert documents(wh) == before


class _T:
    def __init__(self, record_id: str, source_file: str, line: int) -> None:
        self.record_id, self.source_file, self.line = record_id, source_file, line


def test_current_views_are_written_once_and_push_filters_into_the_scan(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    publish(wh, 0, {"a": 3, "b": 2})
    created = ensure_views(wh, [(DS, "chunks"), (DS, "raw"), (DS, "documents")])
    assert created == sorted(["manual_chunks", "manual_chunks_history", "manual_raw", "manual_raw_history",
                              "manual_documents"])
    publish(wh, 1, {"a": 1})
    update_index(wh, DS, day(2), tombstones=tombs("b"))
    assert ensure_views(wh, [(DS, "chunks"), (DS, "raw"), (DS, "documents")]) == []  # data moved, views did not
    hit = make_chunk_id(make_doc_id(DS, "a"), "root")
    con = connect_catalog(wh)
    try:
        assert con.execute("SELECT partition_date FROM codex.manual_chunks WHERE chunk_id = ?", [hit]).fetchall() == [
            (day(1),)
        ]
        assert con.execute("SELECT count(*) FROM codex.manual_chunks_history WHERE chunk_id = ?", [hit]).fetchall() == [
            (2,)
        ]
        assert con.execute("SELECT count(*), count(DISTINCT chunk_id) FROM codex.manual_chunks").fetchall() == [(1, 1)]
        assert con.execute("SELECT record_id FROM codex.manual_raw").fetchall() == [("a",)]  # b retracted
        plan = con.execute(
            "EXPLAIN (FORMAT json) SELECT * FROM codex.manual_chunks WHERE chunk_id = ?", [hit]
        ).fetchall()[0][1]
    finally:
        con.close()
    (chunk_scan,) = [n for n in _nodes(json.loads(plan)) if "chunk_text" in n.get("extra_info", {}).get("Projections", [])]
    assert chunk_scan["name"] == "READ_PARQUET" and f"chunk_id = '{hit}'" in chunk_scan["extra_info"]["Filters"]


def _nodes(plan: list[dict]) -> list[dict]:
    out = []
    for node in plan:
        out.append(node)
        out += _nodes(node.get("children", []))
    return out


def test_unique_check_finds_a_duplicate_id(tmp_path: Path) -> None:
    wh = Warehouse(tmp_path)
    publish(wh, 0, {"a": 2, "b": 2})
    assert check_unique_chunk_ids(wh, DS).passed
    table = chunk_table(day(1), {"c": 2})  # a forged file: c's root chunk carries a's root id
    ids = table.column("chunk_id").to_pylist()
    ids[0] = make_chunk_id(make_doc_id(DS, "a"), "root")
    wh.write(table.set_column(0, "chunk_id", pa.array(ids)), DS, "chunks", day(1))
    update_index(wh, DS, day(1), landed=landed("c"))
    result = check_unique_chunk_ids(wh, DS)
    assert not result.passed and result.duplicates == 1 and result.rows == 6
    assert result.examples == ((ids[0], 2, (make_doc_id(DS, "a"), make_doc_id(DS, "c"))),)
