"""The redirect table: golden cases of the pure function, then a rename through real Dagster."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import re

import dagster as dg
import pyarrow as pa
import pytest

from codex_pipeline.cli import app as cli
from codex_pipeline.core.ids import content_hash, make_chunk_id, make_locator
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.datasets.registry import DatasetSpec, get_dataset
from codex_pipeline.defs.assets import build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.redirects.matching import INPUT_COLUMNS, REDIRECT_SCHEMA, compute_redirects
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import materialize_dataset
from codex_pipeline_tests.redirect_reference import exact_redirects

DAY = dt.date(2026, 11, 24)
T0 = dt.datetime(2026, 11, 24, 8, 0, tzinfo=dt.UTC)
T1 = dt.datetime(2026, 11, 25, 8, 0, tzinfo=dt.UTC)
DOC = "urn:aprs:docs:guide.md"


def _table(rows: list[tuple[str, str, tuple[int, int], str]], version: str = "1.0", doc: str = DOC) -> pa.Table:
    """A chunk table (the columns matching reads) from (section_id, text, span, rev8) rows."""
    cols: dict[str, list] = {c: [] for c in INPUT_COLUMNS}
    for seq, (sid, text, (s, e), rev) in enumerate(rows):
        cols["chunk_id"].append(make_chunk_id(doc, sid))
        cols["doc_id"].append(doc)
        cols["section_id"].append(sid)
        cols["seq_index"].append(seq)
        cols["evidence_anchor"].append(f'{{"page":null,"char_span":[{s},{e}]}}')
        cols["chunking_version"].append(version)
        cols["locator"].append(make_locator(doc.rsplit(":", 1)[1], rev, sid, None, 0))
        cols["content_hash"].append(content_hash(text))
        cols["chunk_text"].append(text)
    return pa.table(cols)


def _run(previous, current, stored=None, version="1.0", now=T0) -> pa.Table:
    out, exact = (
        matcher(previous, current, dataset="docs", partition_date=DAY, chunking_version=version,
                previous_redirects=stored, now=now)
        for matcher in (compute_redirects, exact_redirects)
    )
    assert out.equals(exact), "the row-at-a-time reference matcher disagrees"
    return out


def _summary(redirects: pa.Table) -> list[tuple]:
    """(old section, new section, match, overlap) per row, in the table's order."""
    by_id = {}
    for r in redirects.to_pylist():
        by_id[r["old_chunk_id"]] = (r["old_section_id"], r["new_section_id"], r["match"], r["overlap"])
        if r["new_chunk_id"] is not None:
            assert r["new_chunk_id"] == make_chunk_id(r["doc_id"], r["new_section_id"])
    return list(by_id.values())


def test_rename_is_matched_by_content_hash() -> None:
    old = _table([("intro", "Intro.", (0, 6), "aaaaaaaa"), ("setup", "Install it.", (8, 19), "aaaaaaaa")])
    # the intro was edited (same id, no redirect); the setup section was renamed
    new = _table([("intro", "Intro, edited.", (0, 14), "bbbbbbbb"), ("install", "Install it.", (16, 27), "bbbbbbbb")],
                 version="2.0")
    out = _run(old, new, version="2.0")
    assert out.schema == REDIRECT_SCHEMA
    (row,) = out.to_pylist()
    assert row == {
        "dataset": "docs", "partition_date": DAY, "doc_id": DOC,
        "old_chunk_id": make_chunk_id(DOC, "setup"), "old_section_id": "setup", "old_chunking_version": "1.0",
        "new_chunk_id": make_chunk_id(DOC, "install"), "new_section_id": "install", "new_chunking_version": "2.0",
        "match": "content_hash", "overlap": None, "created_at": T0,
    }


def test_unchanged_text_is_matched_by_best_span_overlap() -> None:
    rev = "cccccccc"
    old = _table([("root", "R" * 200, (0, 200), rev), ("s1", "a" * 100, (0, 100), rev), ("s2", "b" * 100, (100, 200), rev)])
    # a new chunking version cuts at 140; the root spans everything and must not win
    new = _table([("root", "R" * 200, (0, 200), rev), ("p1", "x" * 140, (0, 140), rev), ("p2", "y" * 60, (140, 200), rev)],
                 version="2.0")
    assert _summary(_run(old, new, version="2.0")) == sorted(
        [("s1", "p1", "span_overlap", round(100 / 140, 6)), ("s2", "p2", "span_overlap", 0.6)],
        key=lambda r: make_chunk_id(DOC, r[0]),
    )


def test_a_whitespace_only_edit_keeps_rev8_but_offsets_are_not_trusted() -> None:
    # collapsing double spaces keeps rev8 (it hashes the normalized text) but moves every offset;
    # by span overlap the later chunks would land on the wrong neighbours
    rev = "abababab"
    words = [[f"w{k}x{i}" for i in range(6)] for k in range(6)]

    def table(sep: str, version: str, prefix: str) -> pa.Table:
        rows, pos = [], 0
        for k, ws in enumerate(words):
            text = sep.join(ws) + "."
            rows.append((f"{prefix}{k}", text, (pos, pos + len(text)), rev))
            pos += len(text) + 1
        return _table(rows, version=version)

    out = _summary(_run(table("   ", "1.0", "old"), table(" ", "2.0", "new"), version="2.0"))
    assert sorted(out) == [(f"old{k}", f"new{k}", "similar_text", 1.0) for k in range(6)]


def test_changed_text_is_matched_by_similar_words_else_removed() -> None:
    other = "urn:aprs:docs:gone.md"
    old = pa.concat_tables([
        _table([
            ("a", "Alpha.", (0, 6), "dddddddd"),
            ("b", "Beta gamma delta epsilon.", (7, 32), "dddddddd"),
            ("c", "Zeta eta theta.", (33, 48), "dddddddd"),
        ]),
        _table([("only", "Only.", (0, 5), "eeeeeeee")], doc=other),
    ])
    # the text changed (new rev8), so offsets are not comparable: `b` was lightly edited under a new
    # id (3 of its 4 words kept, 3/5 = 0.6 >= 0.5), `c` was rewritten (no word kept)
    new = _table([
        ("a", "Alpha!", (0, 6), "ffffffff"),
        ("b2", "Beta gamma delta omega.", (7, 30), "ffffffff"),
        ("c2", "Something else entirely.", (31, 55), "ffffffff"),
    ])
    out = _run(old, new).to_pylist()
    assert sorted((r["doc_id"], r["old_section_id"], r["new_section_id"], r["match"], r["overlap"]) for r in out) == [
        (other, "only", None, "removed", None),  # the whole document left the partition
        (DOC, "b", "b2", "similar_text", 0.6),
        (DOC, "c", None, "removed", None),
    ]


def test_chain_resolves_to_the_newest_id_and_keeps_its_history() -> None:
    rev = "99999999"
    v1 = _table([("a", "Alpha text.", (0, 11), "11111111"), ("keep", "Kept.", (12, 17), "11111111")])
    v2 = _table([("b", "Alpha text.", (0, 11), rev), ("keep", "Kept!", (12, 17), rev)], version="2.0")
    v3 = _table([("c", "Alpha text, recut.", (0, 10), rev), ("keep", "Kept!", (10, 17), rev)], version="3.0")
    first = _run(v1, v2, version="2.0", now=T0)
    assert _summary(first) == [("a", "b", "content_hash", None)]
    second = _run(v2, v3, first, version="3.0", now=T1)
    rows = {r["old_section_id"]: r for r in second.to_pylist()}
    assert set(rows) == {"a", "b"}
    # A→B (content_hash) then B→C (span_overlap 10/11): A→C, as weak as its weakest hop
    assert (rows["a"]["new_section_id"], rows["a"]["match"], rows["a"]["overlap"]) == ("c", "span_overlap", round(10 / 11, 6))
    assert (rows["b"]["new_section_id"], rows["b"]["match"]) == ("c", "span_overlap")
    assert rows["a"]["created_at"] == T0 and rows["b"]["created_at"] == T1  # when each id disappeared
    assert rows["a"]["old_chunking_version"] == "1.0" and rows["a"]["new_chunking_version"] == "3.0"
    # a re-run with nothing new changes nothing
    assert _run(v3, v3, second, version="3.0", now=T1.replace(hour=20)).equals(second)


def test_an_id_that_reappears_loses_its_redirect() -> None:
    rev = "77777777"
    v1 = _table([("a", "Same text.", (0, 10), rev)])
    v2 = _table([("b", "Same text.", (0, 10), rev)], version="2.0")
    first = _run(v1, v2, version="2.0")
    assert _summary(first) == [("a", "b", "content_hash", None)]
    back = _run(v2, v1, first, version="1.0")  # rolled back: `a` exists again, `b` is the one gone
    assert _summary(back) == [("b", "a", "content_hash", None)]


def test_earlier_removals_stay_and_order_is_deterministic() -> None:
    rev = "55555555"
    v1 = _table([(f"s{i}", f"text {i}", (10 * i, 10 * i + 6), rev) for i in range(6)])
    v2 = _table([("s0", "text 0", (0, 6), "66666666")])  # every other section dropped
    first = _run(v1, v2)
    assert [r["match"] for r in first.to_pylist()] == ["removed"] * 5
    assert first.column("old_chunk_id").to_pylist() == sorted(first.column("old_chunk_id").to_pylist())
    shuffled = v1.take([3, 0, 5, 1, 4, 2])
    assert _run(shuffled, v2).equals(first)
    assert _run(v2, v2, first).equals(first)  # still gone, still listed
    assert _run(None, v1, first).num_rows == 0  # all back


def test_similar_text_only_targets_new_ids_near_the_old_place() -> None:
    words = lambda i: " ".join(f"w{i}x{j}" for j in range(10))  # noqa: E731 - ten words of their own
    near = "Near words: " + words(1)
    old = _table([("keep", "Kept line.", (0, 10), "11111111"), ("gone", near, (11, 40), "11111111")]
                 + [(f"pad{i}", words(100 + i), (50 + i, 51 + i), "11111111") for i in range(40)])
    # `gone` is deleted and its words now live in `keep` (an id that already existed): not a target
    new = _table([("keep", "Kept line. " + near, (0, 40), "22222222")]
                 + [(f"pad{i}", words(100 + i), (50 + i, 51 + i), "22222222") for i in range(40)])
    assert _summary(_run(old, new)) == [("gone", None, "removed", None)]
    # a new id with the same words far away in reading order (> SIMILAR_WINDOW chunks) is not a target either
    far = _table([("keep", "Kept line.", (0, 10), "33333333")]
                 + [(f"pad{i}", words(100 + i), (50 + i, 51 + i), "33333333") for i in range(40)]
                 + [("moved", near + " edited", (200, 236), "33333333")])
    assert _summary(_run(old, far)) == [("gone", None, "removed", None)]
    # near its place, it is
    close = _table([("keep", "Kept line.", (0, 10), "44444444"), ("renamed", near + " edited", (11, 47), "44444444")]
                   + [(f"pad{i}", words(100 + i), (50 + i, 51 + i), "44444444") for i in range(40)])
    assert _summary(_run(old, close)) == [("gone", "renamed", "similar_text", round(12 / 13, 6))]  # 12 words + 1


def test_the_chunk_at_the_old_place_wins_when_similar_enough() -> None:
    base = " ".join(f"t{j}" for j in range(20))
    old = _table([("a", base, (0, 50), "55555555"), ("b", "Other text entirely here.", (51, 80), "55555555")])
    # at a's place: 18 of 20 words kept (0.9 >= 0.8); one chunk later: identical words but one (19/20 = 0.95)
    new = _table([("a2", " ".join(f"t{j}" for j in range(18)), (0, 45), "66666666"),
                  ("a3", " ".join(f"t{j}" for j in range(19)), (46, 95), "66666666")])
    assert _summary(_run(old, new))[0] == ("a", "a2", "similar_text", 0.9)


def test_a_chain_of_inexact_hops_multiplies_their_scores() -> None:
    ten = [f"v{j}" for j in range(10)]
    v1 = _table([("a", " ".join(ten), (0, 30), "77777777")])
    v2 = _table([("b", " ".join(ten[:9]), (0, 27), "88888888")], version="2.0")  # 9/10 words
    v3 = _table([("c", " ".join(ten[:8]), (0, 24), "99999999")], version="3.0")  # 8/9 of b's
    first = _run(v1, v2, version="2.0")
    assert _summary(first) == [("a", "b", "similar_text", 0.9)]
    rows = {r["old_section_id"]: r for r in _run(v2, v3, first, version="3.0").to_pylist()}
    assert (rows["a"]["new_section_id"], rows["a"]["match"], rows["a"]["overlap"]) == ("c", "similar_text", round(0.9 * 8 / 9, 6))
    assert (rows["b"]["new_section_id"], rows["b"]["overlap"]) == ("c", round(8 / 9, 6))


def test_a_document_whose_id_changed_is_followed_by_identical_text() -> None:
    renamed = "urn:aprs:docs:guide-renamed.md"
    old = _table([("a", "Alpha text.", (0, 11), "12121212"), ("b", "Beta text.", (12, 22), "12121212")])
    new = pa.concat_tables([
        _table([("x", "Unrelated.", (0, 10), "34343434")]),  # the old document id is gone from the partition
        _table([("a", "Alpha text.", (0, 11), "12121212"), ("b", "Beta, rewritten.", (12, 28), "12121212")], doc=renamed),
    ])
    rows = {r["old_section_id"]: r for r in _run(old, new).to_pylist()}
    assert rows["a"]["new_chunk_id"] == make_chunk_id(renamed, "a") and rows["a"]["match"] == "content_hash"
    assert rows["b"]["new_chunk_id"] is None and rows["b"]["match"] == "removed"  # no identical text anywhere


# -- through Dagster ----------------------------------------------------------------------

def _section(name: str, seed: int) -> str:
    words = ["river", "permit", "ledger", "harbor", "council", "signal", "meadow", "archive", "lantern", "quarry"]
    sentences = [
        " ".join(words[(seed + i * 7 + j) % len(words)] for j in range(9)).capitalize() + f" ({name} {i})."
        for i in range(24)
    ]
    return f"## {name}\n\n" + "\n".join(" ".join(sentences[k:k + 4]) + "\n" for k in range(0, 24, 4))


def _guide(title: str) -> str:
    body = "\n".join(_section(n, s) for s, n in enumerate(["Alpha", "Beta", "Gamma"]))
    return f"# {title}\n\nA short note before the sections.\n\n{body}"


def _chunks_metadata(result: dg.ExecuteInProcessResult) -> dict:
    (mat,) = [
        e.event_specific_data.materialization
        for e in result.all_events
        if e.event_type_value == "ASSET_MATERIALIZATION" and e.asset_key == dg.AssetKey(["docs", "chunks"])
    ]
    return {k: v.value for k, v in mat.metadata.items()}


def _materialize(warehouse: Warehouse, title: str) -> dict:
    landing = warehouse.landing_dir("docs", DAY)
    landing.mkdir(parents=True, exist_ok=True)
    (landing / "guide.md").write_text(_guide(title))
    result = materialize_dataset(warehouse, "docs", DAY.isoformat())
    assert result.success
    return _chunks_metadata(result)


def _redirects(warehouse: Warehouse) -> list[tuple]:
    con = connect_catalog(warehouse)
    try:
        return con.execute(
            "SELECT r.old_section_id, r.new_section_id, r.match, c.section_id "
            "FROM codex.docs_redirects r LEFT JOIN codex.docs_chunks c "
            "ON c.chunk_id = r.new_chunk_id AND c.partition_date = r.partition_date "
            "ORDER BY r.old_section_id"
        ).fetchall()
    finally:
        con.close()


def _inspect(warehouse: Warehouse, chunk_id: str) -> tuple[int, str]:
    """`codex inspect chunk ID` through the real command line; stdout and stderr together."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(["--data-dir", str(warehouse.root), "inspect", "chunk", chunk_id])
    return rc, out.getvalue() + err.getvalue()


@pytest.mark.slow  # five Dagster runs of one day; the quick lane keeps test_redirects_survive_a_quarantined_run
def test_renamed_heading_redirects_through_dagster(warehouse: Warehouse) -> None:
    meta = _materialize(warehouse, "Field notes")
    assert meta["redirects"] == 0 and not warehouse.has_files("docs", "redirects")
    first = warehouse.read("docs", "chunks", DAY).column("section_id").to_pylist()
    assert first == ["field-notes", "field-notes/beta", "field-notes/gamma"]  # the short intro fused with Alpha

    # renaming the H1 renames every section path: the untouched sections move by content hash,
    # the first chunk (which holds the heading) changed two words and is followed by its words
    meta = _materialize(warehouse, "Log book")
    assert meta["redirects"] == 3 and meta["redirects_by_match"] == {"content_hash": 2, "similar_text": 1}
    assert _redirects(warehouse) == [
        ("field-notes", "log-book", "similar_text", "log-book"),
        ("field-notes/beta", "log-book/beta", "content_hash", "log-book/beta"),
        ("field-notes/gamma", "log-book/gamma", "content_hash", "log-book/gamma"),
    ]

    # `codex inspect chunk` follows a stored id to its new chunk
    old_beta, old_intro = make_chunk_id(DOC, "field-notes/beta"), make_chunk_id(DOC, "field-notes")
    rc, out = _inspect(warehouse, old_beta)
    assert rc == 0 and "log-book/beta" in out and f"({old_beta} now redirects here: match=content_hash" in out
    rc, out = _inspect(warehouse, old_intro)
    assert rc == 0 and re.search(r"section +log-book\n", out) and "match=similar_text" in out

    # a second rename: the stored rows follow the chain to the newest ids
    _materialize(warehouse, "Trail log")
    assert _redirects(warehouse) == [
        ("field-notes", "trail-log", "similar_text", "trail-log"),
        ("field-notes/beta", "trail-log/beta", "content_hash", "trail-log/beta"),
        ("field-notes/gamma", "trail-log/gamma", "content_hash", "trail-log/gamma"),
        ("log-book", "trail-log", "similar_text", "trail-log"),
        ("log-book/beta", "trail-log/beta", "content_hash", "trail-log/beta"),
        ("log-book/gamma", "trail-log/gamma", "content_hash", "trail-log/gamma"),
    ]

    # back to the first title: those ids exist again, so their rows go
    meta = _materialize(warehouse, "Field notes")
    assert [r[0] for r in _redirects(warehouse)] == [
        "log-book", "log-book/beta", "log-book/gamma", "trail-log", "trail-log/beta", "trail-log/gamma",
    ]
    assert meta["redirects"] == 6

    # the file rewritten from scratch: nothing holds the old words, every id is reported removed
    landing = warehouse.landing_dir("docs", DAY)
    (landing / "guide.md").write_text("# Errata\n\nNothing of the earlier notes survives in this file.\n")
    assert materialize_dataset(warehouse, "docs", DAY.isoformat()).success
    assert {r[2] for r in _redirects(warehouse)} == {"removed"}
    rc, out = _inspect(warehouse, old_beta)
    assert rc != 0 and f"{old_beta} was removed from codex.docs_chunks" in out


# -- a quarantined run in between ------------------------------------------------------------

_MODE = {"cut": "a"}


def _switchable_chunker(doc, limits=None):
    """Paragraph chunks named by the current mode; mode "bad" lies about a count (the contract fails)."""
    mode, text, out, pos = _MODE["cut"], doc.text, [], 0
    for k, para in enumerate(p for p in text.split("\n\n") if p.strip()):
        start = text.index(para, pos)
        pos = start + len(para)
        n = count_tokens(para) + (1 if mode == "bad" else 0)
        out.append(ChunkDraft(f"{mode}.{k}", "narrative_window", para, ((start, pos),), n))
    return out


def test_redirects_survive_a_quarantined_run(warehouse: Warehouse, monkeypatch) -> None:
    spec = DatasetSpec("switchset", "chunk ids that change with a mode", get_dataset("narrative").load_day,
                       _switchable_chunker, "1.0")
    landing = warehouse.landing_dir("switchset", DAY)
    landing.mkdir(parents=True, exist_ok=True)
    (landing / "notes.txt").write_text("First paragraph here.\n\nSecond paragraph there.\n")

    def run(mode: str) -> dg.ExecuteInProcessResult:
        monkeypatch.setitem(_MODE, "cut", mode)
        return dg.materialize(
            [a for a in build_dataset_assets(spec) if dg.AssetKey(["switchset", "embeddings"]) not in a.keys],
            partition_key=DAY.isoformat(),
            resources={"warehouse": CodexWarehouse(data_dir=str(warehouse.root)), "embedding": EmbeddingSettings()},
            raise_on_error=False,
        )

    assert run("a").success
    (doc,) = set(warehouse.read("switchset", "chunks", DAY).column("doc_id").to_pylist())
    run("bad")  # the contract fails: chunks unpublished, quarantined
    assert not warehouse.partition_path("switchset", "chunks", DAY).exists()
    assert warehouse.partition_path("switchset", "quarantine", DAY).exists()
    assert run("b").success
    rows = {r["old_chunk_id"]: (r["new_chunk_id"], r["match"]) for r in warehouse.read("switchset", "redirects", DAY).to_pylist()}
    assert rows == {
        make_chunk_id(doc, "a.0"): (make_chunk_id(doc, "b.0"), "content_hash"),
        make_chunk_id(doc, "a.1"): (make_chunk_id(doc, "b.1"), "content_hash"),
    }
    assert not warehouse.partition_path("switchset", "quarantine", DAY).exists()
    assert not warehouse.partitions("switchset", "chunks_last_published")  # the baseline is gone once published again
