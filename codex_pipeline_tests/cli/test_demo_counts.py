"""The demo's chunk-count table reports the same p50 as ``codex inspect summary`` (one median definition)."""

from __future__ import annotations

import duckdb

from codex_pipeline.cli.app import COUNTS_COLUMNS, chunk_counts
from codex_pipeline.explore.inspector import Distribution

# Ten agenda items: DuckDB's median interpolates the two middle counts ((130 + 136) / 2 = 133), the
# inspector's nearest-rank p50 is one of them: the two disagreed (issue 44: 133 vs 130).
AGENDA = [20, 40, 60, 100, 130, 136, 300, 400, 500, 575]
TURNS = [26, 30, 786]


def test_the_demo_table_and_the_inspector_give_one_p50() -> None:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA codex")
    con.execute("CREATE TABLE codex.civic_chunks (doc_id VARCHAR, chunk_type VARCHAR, token_count INTEGER)")
    rows = [(f"d{i % 5}", "agenda_item", n) for i, n in enumerate(AGENDA)] + [("d0", "speaker_turn", n) for n in TURNS]
    con.executemany("INSERT INTO codex.civic_chunks VALUES (?, ?, ?)", rows)
    assert con.execute("SELECT median(token_count)::INT FROM codex.civic_chunks WHERE chunk_type = 'agenda_item'"
                       ).fetchone() == (133,)  # the definition the demo no longer uses
    table = chunk_counts(con, "civic")
    assert COUNTS_COLUMNS == ["chunk_type", "chunks", "documents", "p50_tokens", "max_tokens"]
    agenda, turns = Distribution.of(AGENDA), Distribution.of(TURNS)
    assert table == [("agenda_item", 10, 5, agenda.p50, 575), ("speaker_turn", 3, 1, turns.p50, 786)]
    assert agenda.p50 == 130
