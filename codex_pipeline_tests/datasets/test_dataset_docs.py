"""Every registry dataset has its page in docs/datasets/, and the page's header agrees with the registry.

The header is the ``| | |`` table under the page title; it carries at least
``chunker_revision`` and ``source_version`` (the two versions a user reads to know
whether a partition was built by today's code). A revision bumped in the registry
without its page fails here, naming the page, the field and both values.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from codex_pipeline.datasets.registry import default_registry

DOCS = Path(__file__).resolve().parents[2] / "docs" / "datasets"
ROW = re.compile(r"^\|\s*(?P<key>[^|]+?)\s*\|\s*(?P<value>.*?)\s*\|\s*$")
NOT_CHUNKED = "not chunked"


def header(text: str) -> dict[str, str]:
    """The first table of a page, before its first ``##`` section, as ``{field: value}``."""
    head = text.split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in head.splitlines():
        m = ROW.match(line)
        if m and not set(m["key"]) <= {"-", " "}:
            rows[m["key"].strip("`")] = m["value"]
    return rows


def version(value: str) -> str:
    """``\\`2.1\\``` → ``2.1``: the value in backticks (a note may follow it)."""
    m = re.match(r"`([^`]+)`", value)
    return m.group(1) if m else value


@pytest.mark.parametrize("spec", default_registry(), ids=lambda s: s.name)
def test_every_dataset_has_a_page_whose_header_matches_the_registry(spec) -> None:
    page = DOCS / f"{spec.name}.md"
    assert page.is_file(), f"{spec.name} is in the registry but has no page {page.relative_to(DOCS.parents[1])}"
    assert page.read_text().startswith(f"# `{spec.name}`\n"), f"{page.name} must open with the title # `{spec.name}`"
    rows = header(page.read_text())
    for field in ("chunker_revision", "source_version"):
        assert field in rows, f"{page.name}: the header table has no {field} row"
    assert version(rows["source_version"]) == spec.source_version, (
        f"{page.name} says source_version {rows['source_version']}, the registry says {spec.source_version}"
    )
    if spec.chunked:
        assert version(rows["chunker_revision"]) == spec.chunker_revision, (
            f"{page.name} says chunker_revision {rows['chunker_revision']}, the registry says {spec.chunker_revision}"
        )
    else:
        assert rows["chunker_revision"] == NOT_CHUNKED, f"{page.name}: {spec.name} is not chunked; say so"


def test_header_parser_reads_only_the_table_above_the_first_section() -> None:
    text = (
        "# `x`\n\nAbout x.\n\n| | |\n| --- | --- |\n| `doc_id` | `urn:aprs:x:{id}` |\n"
        "| chunker_revision | `2.1` (a note) |\n| source_version | `3` |\n\n## Later\n\n| source_version | `9` |\n"
    )
    rows = header(text)
    assert rows == {"doc_id": "`urn:aprs:x:{id}`", "chunker_revision": "`2.1` (a note)", "source_version": "`3`"}
    assert version(rows["chunker_revision"]) == "2.1" and version(rows["source_version"]) == "3"


def test_every_page_belongs_to_a_dataset_or_is_linked_from_one() -> None:
    """No orphan page: a page that is not a dataset's own is linked from one that is."""
    names = {s.name for s in default_registry()}
    linked = "".join((DOCS / f"{n}.md").read_text() for n in names if (DOCS / f"{n}.md").is_file())
    for page in DOCS.glob("*.md"):
        if page.stem not in names:
            assert f"({page.name}" in linked, f"{page.name} is no dataset's page and no dataset page links it"
