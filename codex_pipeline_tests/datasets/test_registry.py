"""The registry: every chunker's limits live in its entry and are part of its chunking_version."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from codex_pipeline.chunkers.email import EmailLimits
from codex_pipeline.chunkers.narrative import WindowLimits
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.datasets.registry import default_registry, get_dataset

CHUNKED = [s for s in default_registry() if s.chunked]


@pytest.mark.parametrize("spec", CHUNKED, ids=lambda s: s.name)
def test_every_chunker_gets_its_limits_from_the_registry(spec) -> None:
    assert dataclasses.is_dataclass(spec.limits) and spec.limits.__dataclass_params__.frozen, (
        f"{spec.name}: declare the chunker's limits as a frozen dataclass in its registry entry"
    )
    assert "limits" in inspect.signature(spec.chunker).parameters


@pytest.mark.parametrize("spec", CHUNKED, ids=lambda s: s.name)
def test_changing_any_limit_changes_the_chunking_version(spec) -> None:
    """So a limit changed without a revision bump still re-chunks every partition (version sensor)."""
    seen = {spec.chunking_version}
    for f in dataclasses.fields(spec.limits):
        value = getattr(spec.limits, f.name)
        if isinstance(value, bool):
            other = not value
        elif isinstance(value, int | float):
            other = value + 1
        elif isinstance(value, str):
            other = value + "x"
        elif value is None:
            other = 1
        else:
            other = None
        try:
            limits = dataclasses.replace(spec.limits, **{f.name: other})
        except (TypeError, ValueError):  # the limits validate themselves: this value is not allowed
            continue
        changed = dataclasses.replace(spec, limits=limits)
        assert changed.chunking_version not in seen, f"{spec.name}: changing {f.name} kept the version"
        seen.add(changed.chunking_version)
    bumped = dataclasses.replace(spec, chunker_revision=spec.chunker_revision + ".1")
    assert bumped.chunking_version not in seen


def _long_text(words: int) -> str:
    return " ".join(f"word{i % 97} and more text" for i in range(words))


def test_narrative_windows_follow_the_registry_limits() -> None:
    spec = get_dataset("narrative")
    doc = SourceDocument("urn:aprs:narrative:x", "x", _long_text(900), "x.txt")
    default = spec.chunker(doc, spec.limits)
    small = spec.chunker(doc, WindowLimits(window_tokens=200, overlap_tokens=20))
    assert max(d.token_count for d in small) <= 200 < max(d.token_count for d in default)
    assert len(small) > len(default)


def test_email_windows_follow_the_registry_limits() -> None:
    from codex_pipeline.sources.email.reader import load_email_day
    from codex_pipeline_tests.conftest import FIXTURES

    doc = max(load_email_day(FIXTURES / "email_threads").documents, key=lambda d: len(d.payload["messages"]))
    spec = get_dataset("email_threads")
    default = spec.chunker(doc, spec.limits)
    narrow = spec.chunker(doc, EmailLimits(max_emails_per_chunk=2, overlap_emails=0))
    assert len(narrow) > len(default)
