"""RecordSchema.validate (column-wise checks) gives the reasons pandera gives for the same schema."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pandera.pandas as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.sources.records import Field, RawRecord, RecordSchema, short_repr
from codex_pipeline.sources.structured import RECORD_ID_RULE, one_line

SCHEMA = RecordSchema("t", "id", (
    Field("id", "string", True, rule=RECORD_ID_RULE),
    Field("name", "string", False, rule=one_line(20)),
    Field("count", "integer", False),
    Field("amount", "number", True),
    Field("day", "date", False),
    Field("when", "datetime", False),
    Field("flag", "boolean", False),
    Field("tags", "list[string]", False),
))

VALUES = st.one_of(
    st.none(), st.just(""), st.text(max_size=30), st.integers(-5, 5), st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["2024-01-31", "2024-13-01", "2024-01-31T10:00"]),
    st.lists(st.one_of(st.text(max_size=5), st.integers()), max_size=3),
)
RECORDS = st.lists(st.dictionaries(st.sampled_from(["id", "name", "count", "amount", "day", "when", "flag", "tags", "x"]),
                                   VALUES, max_size=9), max_size=12)


def pandera_problems(schema: RecordSchema, records: list[RawRecord]) -> dict[int, set[str]]:
    """What the schema's pandera form reports, by record (the reference the column-wise checks follow)."""
    names = [f.name for f in schema.fields]
    frame = pd.DataFrame({n: pd.Series([r.data.get(n) for r in records], dtype=object) for n in names})
    out: dict[int, set[str]] = {}
    try:
        schema.pandera_schema().validate(frame, lazy=True)
    except pa.errors.SchemaErrors as err:
        for row in err.failure_cases.itertuples():
            if pd.isna(row.index):
                continue
            value = records[int(row.index)].data.get(row.column)
            out.setdefault(int(row.index), set()).add(f"field {row.column!r} fails {row.check!r} (got {short_repr(value)})")
    for i, r in enumerate(records):
        extra = sorted(set(r.data) - set(names))
        if extra:
            out.setdefault(i, set()).add(f"unknown field(s) {', '.join(map(repr, extra))}")
    return out


@settings(max_examples=60, deadline=None)
@given(RECORDS)
def test_column_checks_match_pandera(datas: list[dict[str, Any]]) -> None:
    records = [RawRecord("f.csv", f"row {i + 2}", d) for i, d in enumerate(datas)]
    valid, rejects = SCHEMA.validate(records)
    want = pandera_problems(SCHEMA, records)
    assert [r.ref for r in valid] == [r.ref for i, r in enumerate(records) if i not in want]
    got = {(r.record_ref or "").split(",")[0]: r.reason for r in rejects}
    assert got == {records[i].ref: "; ".join(sorted(p)) for i, p in want.items()}


def test_nan_is_missing_and_fails_a_required_number() -> None:
    recs = [RawRecord("f", "row 2", {"id": "a", "amount": math.nan}), RawRecord("f", "row 3", {"id": "b", "amount": 1.5})]
    valid, rejects = SCHEMA.validate(recs)
    assert [r.ref for r in valid] == ["row 3"]
    assert rejects[0].reason == "field 'amount' fails 'required number' (got NaN)"
