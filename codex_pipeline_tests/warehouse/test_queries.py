"""The SQL Codex fills in for users: a dataset name is an identifier or nothing, a chunk id is a value."""

from __future__ import annotations

import pytest

from codex_pipeline.warehouse.queries import example_sql, search_sql


@pytest.mark.parametrize("name", ["narrative_chunks UNION SELECT 1 --", "narrative;", "../x", "Narrative"])
def test_a_dataset_name_with_sql_in_it_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="not a plain identifier"):
        search_sql(name)
    with pytest.raises(ValueError, match="not a plain identifier"):
        example_sql(name, "urn:aprs:chunk:0")


def test_a_chunk_id_with_a_quote_stays_a_value() -> None:
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE SCHEMA codex")
    con.execute("CREATE VIEW codex.demo_chunks AS SELECT 'a' AS chunk_id, 'd' AS doc_id, 'a' AS parent_chunk_id, 't' AS chunk_text")
    assert con.execute(example_sql("demo", "a")).fetchall() == [("a", "t")]
    assert con.execute(example_sql("demo", "x' OR '1'='1")).fetchall() == []  # one row if it were SQL
    assert "codex.demo_embeddings_history" in search_sql("demo", history=True)
