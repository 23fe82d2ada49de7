"""The offline extractor: exact spans on every fixture, clause splitting, pronouns resolved only when unambiguous."""

from __future__ import annotations

import datetime as dt

import pytest

from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import default_registry, get_dataset
from codex_pipeline.propositions.base import JOIN, ChunkInput
from codex_pipeline.propositions.offline import OfflineExtractor, propositions_of
from codex_pipeline.propositions.step import chunk_inputs
from codex_pipeline_tests.conftest import FIXTURES

DAY = dt.date(2026, 11, 24)
OPTED_IN = [s.name for s in default_registry() if s.propositions]


def _inputs(dataset: str) -> list[ChunkInput]:
    spec = get_dataset(dataset)
    loaded = spec.load_day(FIXTURES / dataset)
    raw = steps.ingest(spec, DAY, loaded.documents, loaded.rejects).table
    chunks = steps.chunk(spec, DAY, steps.documents_from_raw(raw)).table
    return chunk_inputs(chunks, raw)


def test_registry_defaults_are_the_dense_factual_datasets() -> None:
    assert OPTED_IN == ["events_timeline", "permit_signals", "osha_safety", "docs", "documents"]


@pytest.mark.parametrize("dataset", OPTED_IN)
def test_offline_spans_reproduce_canonical_text(dataset: str) -> None:
    inputs = _inputs(dataset)
    result = OfflineExtractor().extract(inputs)
    total = 0
    for chunk, ext in zip(inputs, result.extractions):
        assert ext.reject is None and not ext.deferred
        lo, hi = min(s for s, _ in chunk.sources), max(e for _, e in chunk.sources)
        for st in ext.statements:
            assert st.spans and st.score == 1.0
            assert all(lo <= s < e <= hi for s, e in st.spans), (chunk.chunk_id, st)
            assert JOIN.join(chunk.canonical[s:e] for s, e in st.spans) == st.text
            total += 1
    assert total and max(len(e.statements) for e in result.extractions) > 1  # chunks fan out into statements
    assert result.stats.requests == 0 and result.stats.cost_usd == 0


def _texts(text: str) -> list[str]:
    return [s.text for s in propositions_of(text, [(0, len(text))])]


def test_coordinated_verb_phrases_and_clauses_become_statements() -> None:
    got = _texts(
        "BERT was introduced by Google in 2018 and uses bidirectional training. "
        "Tiebacks need a street use permit and must be de-tensioned at completion. "
        "No guardrail was in use; the ladder did not extend 3 ft above the landing."
    )
    assert got == [
        "BERT was introduced by Google in 2018",
        "BERT uses bidirectional training.",
        "Tiebacks need a street use permit",
        "Tiebacks must be de-tensioned at completion.",
        "No guardrail was in use",
        "the ladder did not extend 3 ft above the landing.",
    ]


def test_leading_pronoun_takes_the_previous_subject_only_when_it_agrees() -> None:
    assert _texts("The permit was issued on 24 November. It expires in 2027.") == [
        "The permit was issued on 24 November.",
        "The permit expires in 2027.",
    ]
    # plural subject, singular pronoun: ambiguous, left as written
    assert _texts("The inspectors visited the site. It was closed.")[-1] == "It was closed."
    # a determiner, not a pronoun
    assert _texts("The API serves records. This page takes you to a key.")[-1] == "This page takes you to a key."


def test_record_lines_carry_the_record_subject_and_lists_their_lead_in() -> None:
    text = "Permit BP-1 — City of Tacoma\nStatus: Issued\nTags: a1; b2\n\nConditions:\n- fence the site\n- post signage"
    assert _texts(text) == [
        "Permit BP-1 — City of Tacoma",
        "Permit BP-1 Status: Issued",
        "Permit BP-1 Tags: a1",
        "Permit BP-1 b2",
        "Conditions: fence the site",
        "Conditions: post signage",
    ]


def test_headings_code_and_tables_are_not_statements() -> None:
    text = "# Title\n\nKeys are free.\n\n```bash\ncurl -H 'X: y' https://x\n```\n\n| a | b |\n|---|---|\n\nSetext\n------\n"
    assert _texts(text) == ["Keys are free."]


def test_deterministic() -> None:
    inputs = _inputs("docs")
    a, b = OfflineExtractor().extract(inputs), OfflineExtractor().extract(inputs)
    assert [e.statements for e in a.extractions] == [e.statements for e in b.extractions]
