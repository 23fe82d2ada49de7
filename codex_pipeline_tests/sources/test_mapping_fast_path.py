"""RowMapper's fast path for a plain cell gives what the general :meth:`RowMapper.value` gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.sources.mapping.reader import RowMapper, Target
from codex_pipeline.sources.mapping.schema import FieldRule, SourceMapping

RULES = {
    "s": (FieldRule(column="A"), Target("string")),
    "t": (FieldRule(column="A"), Target("text", multiline=True)),
    "m": (FieldRule(column="A"), Target("string", multiline=True)),
    "i": (FieldRule(column="A"), Target("integer")),
    "n": (FieldRule(column="A", strip="$,"), Target("number")),
    "c": (FieldRule(column="A", decimal=","), Target("number")),
    "b": (FieldRule(column="A"), Target("boolean")),
    "d": (FieldRule(column="A", formats=("%m/%d/%Y", "iso")), Target("date")),
    "e": (FieldRule(column="A"), Target("date")),
    "w": (FieldRule(column="A", timezone="America/Vancouver"), Target("datetime")),
}
CELLS = st.one_of(st.text(st.sampled_from(" \t\r\n-$,.0123456789:/TZaeNA"), max_size=14),
                  st.sampled_from(["01/31/2024", "2024-01-31", "2024-01-31T10:00", " 12 ", "NA", "", "yes", "1,5"]))


@settings(max_examples=300, deadline=None)
@given(CELLS)
def test_fast_path_equals_value(cell: str) -> None:
    mapping = SourceMapping.model_validate({
        "codex_mapping": 1, "dataset": "probe", "kind": "record", "title": "Probe", "id": "ID",
        "empty_values": ["", "NA"], "fields": {name: rule for name, (rule, _) in RULES.items()},
    })
    targets = {name: target for name, (_, target) in RULES.items()}
    mapper = RowMapper(mapping, targets, "record_id")
    row = {"ID": "x", "A": cell}
    fast = {name: read for name, _, _, read in mapper._plan}
    assert {f.__name__ for f in fast.values()} == {"read"}  # every rule here takes the fast path
    for name, (rule, target) in RULES.items():
        assert fast[name](row) == mapper.value(row, name, rule, target), name
