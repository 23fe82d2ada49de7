"""Through real Dagster: every landing file of a day is landed, rejected by name or skipped with a reason.

A documents day with a good PDF, a damaged PDF, a tombstone file, a file that cannot be
read and a hidden file: the raw step's metadata counts them (found = landed + rejected +
skipped) and ``codex.documents_files`` names each with its outcome. An email day: every
message read was threaded or rejected. A mapped export with a header and no rows: skipped.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg

from codex_pipeline.defs.definitions import build_definitions
from codex_pipeline.settings import CodexSettings
from codex_pipeline.sources.email.mbox import split_mbox
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, land, materialize_dataset, query_catalog
from codex_pipeline_tests.fakes import FakeEmbedding

DAY = "2026-11-24"


def _raw_metadata(result: dg.ExecuteInProcessResult, dataset: str) -> dict:
    raw = next(e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey([dataset, "raw"]))
    return {k: v.value for k, v in raw.materialization.metadata.items()}


def test_every_documents_file_is_accounted_for(warehouse: Warehouse) -> None:
    landing = land(warehouse, "documents", DAY, FIXTURES / "documents" / "det_employment_solutions_corp.pdf")
    pdf = (FIXTURES / "documents" / "det_employment_solutions_corp.pdf").read_bytes()
    (landing / "damaged.pdf").write_bytes(pdf[: len(pdf) // 3])
    (landing / "_deleted.txt").write_text("urn:aprs:documents:never-landed.txt\n")
    (landing / "unreadable.txt").symlink_to(landing / "gone.txt")  # a link to nothing: cannot be read
    (landing / ".DS_Store").write_bytes(b"\0\1")
    result = materialize_dataset(warehouse, "documents", DAY)
    assert result.success
    meta = _raw_metadata(result, "documents")
    assert (meta["files_found"], meta["files_landed"], meta["files_rejected"], meta["files_skipped"]) == (5, 1, 3, 1)
    rows = {f: (o, n, why) for f, o, n, why in query_catalog(
        warehouse, "SELECT file, outcome, documents, reason FROM codex.documents_files")}
    assert set(rows) == {"det_employment_solutions_corp.pdf", "damaged.pdf", "_deleted.txt", "unreadable.txt", ".DS_Store"}
    assert rows["det_employment_solutions_corp.pdf"][:2] == ("landed", 1)
    assert rows["damaged.pdf"][0] == rows["unreadable.txt"][0] == rows[".DS_Store"][0] == "rejected"
    assert rows["_deleted.txt"][0] == "skipped" and "tombstone" in rows["_deleted.txt"][2]
    assert all(why for o, _, why in rows.values() if o != "landed")  # every file not landed says why
    rejected = {r[0] for r in query_catalog(warehouse, "SELECT source_file FROM codex.documents_rejects")}
    assert {"damaged.pdf", "unreadable.txt", ".DS_Store"} <= rejected


def test_every_email_message_is_threaded_or_rejected(warehouse: Warehouse) -> None:
    landing = land(warehouse, "email_threads", DAY, FIXTURES / "email_threads")
    (landing / "notes.txt").write_text("not mail")
    mbox = landing / "threads.mbox"
    read = len(split_mbox(mbox.read_bytes())[0])  # the messages its separator lines start
    mbox.write_bytes(b"stray text before the first message\n\n" + mbox.read_bytes())  # a reject, not a message
    result = materialize_dataset(warehouse, "email_threads", DAY)
    assert result.success
    meta = _raw_metadata(result, "email_threads")
    assert meta["messages_read"] == meta["messages_landed"] + meta["messages_rejected"] == read + 1  # + reply.eml
    assert (meta["files_found"], meta["files_landed"], meta["files_rejected"]) == (3, 2, 1)
    outcomes = dict(query_catalog(warehouse, "SELECT file, outcome FROM codex.email_threads_files"))
    assert outcomes == {"threads.mbox": "landed", "reply.eml": "landed", "notes.txt": "rejected"}


def test_a_header_only_export_is_skipped_with_its_reason(tmp_path: Path) -> None:
    folder = tmp_path / "mappings"
    folder.mkdir()
    (folder / "street.yaml").write_text("codex_mapping: 1\ndataset: street_permits\nkind: record\n"
                                        "title: street use permit\nid: Permit\nfields:\n  status: Status\n")
    wh = Warehouse(tmp_path / "data")
    landing = wh.landing_dir("street_permits", dt.date.fromisoformat(DAY))
    landing.mkdir(parents=True)
    (landing / "permits.csv").write_text("Permit,Status\nSP-1,open\nSP-2,closed\n")
    (landing / "quiet_week.csv").write_text("Permit,Status\n")
    defs = build_definitions(CodexSettings(data_dir=wh.root, mapping_folders=(folder,)))
    assets = [a for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition)
              and any(k.path == ["street_permits", "raw"] for k in a.keys)]
    result = dg.materialize(assets, partition_key=DAY, instance=dg.DagsterInstance.ephemeral(),
                            resources={"warehouse": defs.resources["warehouse"], "embedding": FakeEmbedding()})
    meta = _raw_metadata(result, "street_permits")
    assert (meta["files_found"], meta["files_landed"], meta["files_skipped"], meta["rows_read"]) == (2, 1, 1, 2)
    rows = dict((f, (o, why)) for f, o, why in query_catalog(wh, "SELECT file, outcome, reason FROM codex.street_permits_files"))
    assert rows["quiet_week.csv"] == ("skipped", "no rows: the file holds a header and nothing else")
