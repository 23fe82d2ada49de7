"""Issue 29, item 4: one bad document never quarantines its day.

A chunker bug breaks the contract for one document of three (its token counts are off). Through a
real Dagster materialization: the day is published and embedded without that document, the rejects
name it (file, doc id, the rule), the quarantine holds its rows with the rule each broke, and its
previous version stays current. A failure no row can be blamed for still fails the partition.
"""

from __future__ import annotations

import datetime as dt

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from codex_pipeline.core.contract_check import ContractReport, validate_chunks
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.pipeline import chunks_day
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import materialize_dataset, query_catalog

D1, D2 = dt.date(2026, 11, 1), dt.date(2026, 11, 2)
NS = "urn:aprs:narrative:"
TEXTS = {
    "alpha.txt": "The harbor commission approved dredging of the north channel after a long debate. " * 5,
    "bravo.txt": "The water board raised rates by four percent and promised new meters for every block. " * 5,
    "charlie.txt": "The parks department will plant two hundred oaks along the river trail next spring. " * 5,
}
BAD = NS + "bravo.txt"


def land(wh: Warehouse, day: dt.date, texts: dict[str, str]) -> None:
    folder = wh.landing_dir("narrative", day)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text)


def break_chunker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunker bug: ``bravo``'s token counts are one too high."""
    real = steps.chunk

    def buggy(*args, **kwargs):  # type: ignore[no-untyped-def]
        part = real(*args, **kwargs)
        table = part.table
        bad = pc.equal(table.column("doc_id"), BAD)
        fixed = pc.if_else(bad, pc.add(table.column("token_count"), 1), table.column("token_count"))
        col = table.schema.get_field_index("token_count")
        table = table.set_column(col, table.schema.field(col), fixed.cast(pa.int32()))
        return type(part)(**{**part.__dict__, "table": table})

    monkeypatch.setattr(chunks_day.steps, "chunk", buggy)


def contract_check(result: dg.ExecuteInProcessResult) -> dg.AssetCheckEvaluation:
    (evaluation,) = [e for e in result.get_asset_check_evaluations() if e.check_name == "chunk_contract"]
    return evaluation


def test_one_bad_document_is_rejected_and_the_day_published_without_it(
    warehouse: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    land(warehouse, D1, TEXTS)
    assert materialize_dataset(warehouse, "narrative", D1.isoformat()).success
    land(warehouse, D2, {name: text + " Amended." for name, text in TEXTS.items()})
    break_chunker(monkeypatch)
    result = materialize_dataset(warehouse, "narrative", D2.isoformat())
    assert result.success  # the day went on to embeddings
    check = contract_check(result)
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["rejected_documents"].value == 1

    published = {d for (d,) in query_catalog(warehouse, f"SELECT DISTINCT doc_id FROM codex.narrative_chunks_history "
                                                f"WHERE partition_date = DATE '{D2}'")}
    assert published == {NS + "alpha.txt", NS + "charlie.txt"}
    embedded = {d for (d,) in query_catalog(warehouse, f"SELECT DISTINCT c.doc_id FROM codex.narrative_embeddings_history e "
                                               f"JOIN codex.narrative_chunks_history c USING (chunk_id, partition_date) "
                                               f"WHERE partition_date = DATE '{D2}'")}
    assert embedded == published
    (reject,) = query_catalog(warehouse, f"SELECT source_file, record_ref, stage, reason FROM codex.narrative_rejects "
                                 f"WHERE partition_date = DATE '{D2}'")
    assert reject[:3] == ("bravo.txt", BAD, "chunk")
    assert "token_count_exact_cl100k" in reject[3] and "left out" in reject[3]
    quarantined = query_catalog(warehouse, "SELECT doc_id, contract_failure FROM codex.narrative_quarantine")
    assert quarantined and {d for d, _ in quarantined} == {BAD}
    assert all("token_count_exact_cl100k" in why for _, why in quarantined)
    current = dict(query_catalog(warehouse, "SELECT doc_id, partition_date FROM codex.narrative_documents"))
    assert current == {NS + "alpha.txt": D2, BAD: D1, NS + "charlie.txt": D2}  # bravo's good version stays

    monkeypatch.undo()  # the chunker is fixed: a rerun publishes bravo and clears its quarantine
    assert materialize_dataset(warehouse, "narrative", D2.isoformat()).success
    assert not warehouse.partition_path("narrative", "quarantine", D2, part=chunks_day.DOCUMENTS_QUARANTINE).exists()
    assert dict(query_catalog(warehouse, "SELECT doc_id, partition_date FROM codex.narrative_documents"))[BAD] == D2


def test_a_failure_no_row_can_be_blamed_for_still_fails_the_partition() -> None:
    """A column of the wrong type names no row: the report is not publishable (the chunks step quarantines the day)."""
    spec = get_dataset("narrative")
    docs = [SourceDocument(doc_id=NS + name, record_id=name, source_file=name, text=text)
            for name, text in TEXTS.items()]
    table = steps.chunk(spec, D1, docs).table
    good = validate_chunks(table, {d.doc_id: d.text for d in docs})
    assert good.passed and good.publishable and not good.rejected_documents
    col = table.schema.get_field_index("token_count")
    wrong = table.set_column(col, "token_count", pc.cast(table.column("token_count"), pa.int64()))
    report = validate_chunks(wrong, {d.doc_id: d.text for d in docs})
    assert not report.publishable and report.unattributed
    merged = ContractReport.merge([good, report])
    assert not merged.publishable and merged.unattributed == report.unattributed


def test_a_day_where_no_document_passed_is_quarantined_whole_and_named(
    warehouse: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every document broken: the chunker, not a document, is at fault. The day is held back from embeddings,
    and still every document is named (rejects) with the rule each row broke (quarantine)."""
    land(warehouse, D1, {"bravo.txt": TEXTS["bravo.txt"]})
    break_chunker(monkeypatch)
    result = materialize_dataset(warehouse, "narrative", D1.isoformat())
    check = contract_check(result)
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    assert not warehouse.partition_path("narrative", "chunks", D1).exists()
    quarantined = warehouse.read("narrative", "quarantine", D1)
    assert set(quarantined.column("doc_id").to_pylist()) == {BAD}
    assert all("token_count_exact_cl100k" in why for why in quarantined.column("contract_failure").to_pylist())
    assert warehouse.stamp(warehouse.partition_path("narrative", "quarantine", D1))["chunking_version"] == \
        get_dataset("narrative").chunking_version  # what the version sensor reads to re-chunk it
    (reject,) = query_catalog(warehouse, "SELECT record_ref, stage FROM codex.narrative_rejects")
    assert reject == (BAD, "chunk")
