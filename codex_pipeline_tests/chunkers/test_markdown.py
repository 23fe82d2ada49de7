"""docs chunker: golden cases for structure, fusing and splitting; properties over shipped Markdown."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_pipeline.chunkers.markdown import SEED_CHARS, MarkdownLimits, MissingStructure, chunk_markdown, structure
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, ChunkType
from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import SourceDocument, blocks_from_json, blocks_to_json
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.markdown import load_docs_day, markdown_document
from codex_pipeline_tests.conftest import CORPORA, needs_corpus

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "codex_pipeline_tests" / "fixtures" / "docs"
SAMPLE = ROOT / "codex_pipeline" / "sample_landing" / "docs"
HTTPX = CORPORA / "markdown" / "httpx"


def doc(text: str, rid: str = "t.md") -> SourceDocument:
    """A document as the docs reader hands it over: canonical text plus its parsed blocks."""
    d = markdown_document(rid, text)
    assert isinstance(d, SourceDocument), d
    return d


def no_fusing(d: SourceDocument) -> list[ChunkDraft]:
    return chunk_markdown(d, MarkdownLimits(min_size=0))


def fixture(name: str) -> SourceDocument:
    return next(d for d in load_docs_day(FIXTURES).documents if d.record_id == name)


def para(seed: int, words: int) -> str:
    vocab = "permit council hearing parcel zoning record export snapshot catalog review".split()
    return " ".join(vocab[(seed * 7 + i * 3) % len(vocab)] for i in range(words)) + "."


def check_drafts(d: SourceDocument, drafts: list[ChunkDraft], cap: int = MAX_CHUNK_TOKENS) -> None:
    """Contract properties every docs chunk list must have."""
    assert drafts
    ids = [x.section_id for x in drafts]
    assert len(ids) == len(set(ids))
    body = d.block("body")
    assert body is not None
    body_start = body.start
    for x in drafts:
        assert x.chunk_type == ChunkType.DOC_SECTION
        assert 1 <= x.token_count <= cap
        assert x.token_count == count_tokens(x.text)
        assert all(body_start <= s < e <= len(d.text) for s, e in x.spans)
        if len(x.spans) == 1:
            s, e = x.spans[0]
            assert d.text[s:e] == x.text
        else:
            assert x.text == "".join(d.text[s:e] for s, e in x.spans)
    # nothing silently dropped: every non-space character of the body is in some chunk
    covered = bytearray(len(d.text))
    for x in drafts:
        for s, e in x.spans:
            covered[s:e] = b"\x01" * (e - s)
    missing = [i for i in range(body_start, len(d.text)) if not covered[i] and not d.text[i].isspace()]
    assert not missing, repr(d.text[missing[0] : missing[0] + 60])
    check_headings_keep_their_first_block(d, drafts)


def check_headings_keep_their_first_block(d: SourceDocument, drafts: list[ChunkDraft]) -> None:
    """No chunk ends on a heading line that has content after it (the heading left its first block)."""
    text = d.text
    heads = structure(d).headers
    for i, h in enumerate(heads):
        # its content: up to the next heading of its level or above, heading lines left out
        stop = next((b.start for b in heads[i + 1 :] if b.level <= h.level), len(text))
        inner = [b for b in heads[i:] if b.start < stop]
        ends = [b.start for b in inner[1:]] + [stop]
        if not "".join(text[a.line_end : e] for a, e in zip(inner, ends)).strip():
            continue  # no block of its own to keep
        for x in drafts:
            end = x.spans[-1][1]
            while end > 0 and text[end - 1].isspace():
                end -= 1
            assert not h.start < end <= h.line_end, f"{x.section_id} ends on the heading {h.title!r}"


def check_sections_tile(d: SourceDocument) -> None:
    """Sections cover the body from its first non-blank line to the end, in order, without gaps."""
    st_ = structure(d)
    body = d.block("body")
    assert body is not None
    assert not d.text[body.start : st_.content_start].strip()
    assert st_.sections[0].start == st_.content_start and st_.sections[-1].end == len(d.text)
    for a, b in zip(st_.sections, st_.sections[1:]):
        assert a.end == b.start
    heads = [h for h in st_.headers if h.level <= 3]
    assert [s.start for s in st_.sections if s.path] == [h.start for h in heads]


# -- structure ----------------------------------------------------------------------------


def test_header_paths_setext_fences_and_front_matter() -> None:
    d = fixture("guide.md")
    drafts = no_fusing(d)  # one chunk per section, but a heading never stands alone
    got = [(x.section_id, x.metadata["headers"]) for x in drafts]
    assert got == [
        ("field-guide", ["Field guide"]),
        ("field-guide/setup", ["Field guide", "Setup"]),
        ("field-guide/usage", ["Field guide", "Usage"]),  # "## Usage" has no text of its own: it takes "### Basic"
        ("field-guide/usage/basic~2", ["Field guide", "Usage", "Basic"]),
        ("field-guide/reference-table", ["Field guide", "Reference table"]),
        ("appendix", ["Appendix"]),
    ]
    setup = drafts[1].text
    assert "# this is a comment, not a heading\n## neither is this" in setup  # fence lines are not headers
    assert "# tilde fences hide headers too" in drafts[-1].text
    assert drafts[0].text.startswith("Field guide\n===========\n")  # front matter kept out of the text
    assert all(x.metadata["front_matter"]["title"] == "Field guide" for x in drafts)
    assert drafts[0].metadata["front_matter"]["reviewed"] == "2026-01-15"
    check_drafts(d, drafts)


def test_fused_chunk_keeps_every_sections_header_path() -> None:
    d = fixture("guide.md")
    drafts = chunk_markdown(d)
    assert [x.section_id for x in drafts] == ["field-guide"]  # the whole small guide fuses into one chunk
    meta = drafts[0].metadata
    assert meta["headers"] == ["Field guide"]
    assert meta["header_paths"] == [
        ["Field guide"],
        ["Field guide", "Setup"],
        ["Field guide", "Usage"],
        ["Field guide", "Usage", "Basic"],
        ["Field guide", "Usage", "Basic"],
        ["Field guide", "Reference table"],
        ["Appendix"],
    ]
    check_drafts(d, drafts)


def test_atx_variants_and_title_cleaning() -> None:
    text = "# One #\n\n  ## The `Client` *class* {#client}\n\ntext\n\n#not-a-header\n\n####### seven\n\n### [Link](u.md)\n"
    st_ = structure(doc(text))
    assert [(h.level, h.title) for h in st_.headers] == [(1, "One"), (2, "The Client class"), (3, "Link")]
    drafts = no_fusing(doc(text))
    # "# One" holds only its heading line: it travels with the section after it
    assert [x.section_id for x in drafts] == ["one", "one/the-client-class/link"]
    assert structure(doc("# **Bold** and _it_\n")).headers[0].title == "Bold and it"


def test_setext_needs_a_paragraph_and_dashes_after_a_blank_line_are_a_rule() -> None:
    text = "Title\n=====\n\nintro\n\n---\n\n- item\n---\n\nSub\n---\nbody\n"
    st_ = structure(doc(text))
    assert [(h.level, h.title) for h in st_.headers] == [(1, "Title"), (2, "Sub")]


def test_heading_in_an_html_comment_is_not_a_section() -> None:
    """CommonMark: an HTML block runs to its end condition, so ``# Not a heading`` is comment text.

    The hand-written scanner this replaced made it a section and nested every later
    section under it.
    """
    text = "# Guide\n\nIntro.\n\n<!--\n# Not a heading\n-->\n\n## Setup\n\nSteps.\n\n## Usage\n\nMore.\n"
    d = doc(text)
    drafts = no_fusing(d)
    assert [(x.section_id, x.metadata["headers"]) for x in drafts] == [
        ("guide", ["Guide"]),
        ("guide/setup", ["Guide", "Setup"]),
        ("guide/usage", ["Guide", "Usage"]),
    ]
    assert "<!--\n# Not a heading\n-->" in drafts[0].text
    check_drafts(d, drafts)


def test_nested_headings_are_content_and_top_level_ones_split() -> None:
    text = ("# Top\n\n    # indented code\n\n> ## Quoted heading\n\n- ## Listed heading\n\n  ```\n  # in a fence in a list\n"
            "  ```\n\n<details>\n\n## Inside details\n\n</details>\n")
    drafts = no_fusing(doc(text))
    # a heading directly inside an HTML block's blank-line-ended start tag is top level again (CommonMark)
    assert [x.section_id for x in drafts] == ["top", "top/inside-details"]
    assert "> ## Quoted heading" in drafts[0].text and "- ## Listed heading" in drafts[0].text


def test_preamble_and_h4_stay_inside_sections() -> None:
    text = "Intro words.\n\n# A\n\n#### deep\n\nmore\n"
    drafts = no_fusing(doc(text))
    assert [x.section_id for x in drafts] == ["preamble", "a"]
    assert drafts[0].metadata["headers"] == []
    assert "#### deep" in drafts[1].text


# -- fusing ----------------------------------------------------------------------------------


def test_fuse_adjacent_small_sections_up_to_max() -> None:
    sections = [f"## S{i}\n\n{para(i, 200)}\n\n" for i in range(3)]
    d = doc("".join(sections))
    sizes = [count_tokens(s) for s in sections]
    assert all(140 < n < 256 for n in sizes)
    drafts = chunk_markdown(d, MarkdownLimits(min_size=256, max_size=512, overlap=32))
    assert [x.section_id for x in drafts] == ["s0", "s2"]
    assert drafts[0].metadata["header_paths"] == [["S0"], ["S1"]]
    assert drafts[1].metadata["header_paths"] == [["S2"]]
    check_drafts(d, drafts)


def test_small_parent_travels_with_the_child_that_is_split() -> None:
    text = "# Parent\n\nShort intro.\n\n## Child\n\n" + "\n\n".join(para(i, 90) for i in range(12)) + "\n"
    d = doc(text)
    drafts = chunk_markdown(d)
    assert drafts[0].section_id == "parent.part.1"
    assert drafts[0].text.startswith("# Parent\n\nShort intro.\n\n## Child")
    assert drafts[0].metadata["header_paths"] == [["Parent"], ["Parent", "Child"]]
    assert drafts[1].metadata["headers"] == ["Parent", "Child"]
    check_drafts(d, drafts)


# -- splitting --------------------------------------------------------------------------------


def test_long_section_split_with_overlap() -> None:
    text = "## Long\n\n" + "\n\n".join(para(i, 90) for i in range(20)) + "\n"
    d = doc(text)
    drafts = chunk_markdown(d)
    assert [x.section_id for x in drafts] == [f"long.part.{k}" for k in range(1, len(drafts) + 1)]
    assert len(drafts) >= 3
    for a, b in zip(drafts, drafts[1:]):
        a_e, b_s = a.spans[0][1], b.spans[0][0]
        assert b_s < a_e, "consecutive parts overlap"
        assert count_tokens(d.text[b_s:a_e]) <= 32 + 2
    assert all(x.token_count <= 512 + 32 for x in drafts)
    assert all(x.metadata["parts"] == len(drafts) for x in drafts)
    check_drafts(d, drafts)


def _changelog() -> str:
    parts = ["# Changelog\n\n"]
    for v in range(6, 0, -1):
        parts.append(f"## Version 0.{v}.0 (March {v}, 2020)\n\n")
        if v % 3 == 0:  # a release note of one long paragraph
            parts.append(" ".join(para(v * 50 + i, 18)[:-1].capitalize() + "." for i in range(45)) + "\n\n")
        parts.append("### Added\n\n" + "".join(f"* {para(v + i, 14)} (Pull #{v}{i:02})\n" for i in range(30)) + "\n")
        parts.append("### Fixed\n\n" + "".join(f"* {para(v * 3 + i, 10)} (Pull #{v}9{i})\n" for i in range(4)) + "\n")
    return "".join(parts)


def test_a_heading_never_leaves_its_first_block() -> None:
    text = _changelog()
    d = doc(text, "CHANGELOG.md")
    drafts = chunk_markdown(d)
    check_drafts(d, drafts)  # includes: no chunk ends on a heading line
    heads = structure(d).headers
    for h in heads:  # the heading's line and the first line after it are in one chunk
        nxt = h.line_end + len(text[h.line_end :]) - len(text[h.line_end :].lstrip())
        assert any(x.spans[0][0] <= h.start and nxt < x.spans[-1][1] for x in drafts), h.title
    assert not [x.section_id for x in drafts if all(line.startswith("#") for line in x.text.split("\n") if line.strip())]
    # a split part starts at a line start or a sentence start, never on a word in the middle of a sentence
    for x in drafts:
        s = x.spans[0][0]
        assert text[s - 1] == "\n" or text[s - 2] in ".!?", (x.section_id, text[s - 20 : s + 20])


def test_headings_travel_with_a_table_that_is_split() -> None:
    rows = "".join(f"| row {i} | {para(i, 30)} |\n" for i in range(60))
    text = "# Reference\n\n## Settings\n\n| name | meaning |\n| --- | --- |\n" + rows
    d = doc(text)
    drafts = chunk_markdown(d)
    check_drafts(d, drafts)
    assert len(drafts) > 2
    assert drafts[0].text.startswith("# Reference\n\n## Settings\n\n| name | meaning |\n| --- | --- |\n| row 0 |")
    assert all(x.text.startswith("| name | meaning |") for x in drafts[1:])


def test_tables_and_fences_are_not_cut_below_the_cap() -> None:
    rows = "\n".join(f"| r{i} | {para(i, 12)} |" for i in range(30))
    code = "\n".join(f"x_{i} = compute({i})  # step {i}" for i in range(60))
    text = (
        f"## Data\n\n{para(1, 60)}\n\n| k | v |\n|---|---|\n{rows}\n\n{para(2, 60)}\n\n"
        f"```python\n{code}\n```\n\n{para(3, 60)}\n"
    )
    d = doc(text)
    drafts = chunk_markdown(d, MarkdownLimits(min_size=64, max_size=200, overlap=16))
    table = next(x for x in drafts if "| k | v |" in x.text)
    assert f"| r29 | {para(29, 12)} |" in table.text and table.token_count > 200
    fence = next(x for x in drafts if "```python" in x.text)
    assert fence.text.rstrip().endswith("```") and "x_59 = compute(59)" in fence.text
    check_drafts(d, drafts)


def test_table_over_the_cap_is_split_by_rows_repeating_the_header() -> None:
    d = fixture("big-table.md")
    drafts = chunk_markdown(d)
    check_drafts(d, drafts)
    pieces = [x for x in drafts if "BP-" in x.text]
    assert len(pieces) >= 3
    header = "| permit | status | notes | fee |\n|--------|--------|-------|----:|\n"
    assert header in pieces[0].text and len(pieces[0].spans) == 1
    for x in pieces[1:]:
        assert len(x.spans) == 2, "a later piece is composed: header rows + its rows"
        (hs, he), (rs, re_) = x.spans
        assert d.text[hs:he] == header
        assert x.text == header + d.text[rs:re_]
    numbers = [int(n) for x in pieces for n in re.findall(r"BP-(\d{4})", x.text)]
    assert numbers == list(range(1, 161)), "every row exactly once, in order"


def test_code_block_over_the_cap_is_cut_between_lines() -> None:
    code = "\n".join(f"value_{i} = transform(record_{i}, option={i})" for i in range(700))
    d = doc(f"# Code\n\n```python\n{code}\n```\n")
    drafts = chunk_markdown(d)
    assert len(drafts) > 2
    for x in drafts:
        assert not re.search(r"value_\d+ = transform\(record_\d+, option=\d+\)\S", x.text)
    check_drafts(d, drafts)


def test_char_budget_is_the_seeds() -> None:
    text = "# Guide\n\n" + "\n\n".join(f"## Part {i}\n\n" + "\n\n".join(para(i + k, 40) for k in range(8)) for i in range(6))
    d = doc(text)
    assert SEED_CHARS == MarkdownLimits(min_size=1024, max_size=2048, overlap=128, unit="chars")
    drafts = chunk_markdown(d, SEED_CHARS)
    assert all(len(x.text) <= 2048 + 128 for x in drafts)
    assert any(len(x.text) > 1024 for x in drafts)
    check_drafts(d, drafts)


def test_invalid_limits_are_refused() -> None:
    with pytest.raises(ValueError):
        MarkdownLimits(min_size=600, max_size=512)
    with pytest.raises(ValueError):
        MarkdownLimits(max_size=2000)
    with pytest.raises(ValueError):
        MarkdownLimits(overlap=400)
    with pytest.raises(ValueError):
        MarkdownLimits(unit="lines")  # type: ignore[arg-type]


# -- structure comes from the reader, through the raw table ---------------------------------


def test_a_document_without_parsed_blocks_is_refused_with_the_fix() -> None:
    """A raw partition ingested before the reader stored blocks must not be chunked by guesswork."""
    old = SourceDocument(doc_id="urn:aprs:docs:old.md", record_id="old.md", text="# A\n\nbody\n", source_file="old.md",
                         payload={"path": "old.md", "body_start": 0})
    with pytest.raises(MissingStructure) as err:
        chunk_markdown(old)
    message = str(err.value)
    assert "\n" not in message and "re-materialize" in message and "raw" in message
    out = pipeline.chunk(get_dataset("docs"), dt.date(2026, 11, 24), [old])
    assert out.table.num_rows == 0
    assert "re-materialize" in out.rejects.column("reason")[0].as_py()


def test_blocks_survive_the_raw_table() -> None:
    """What the chunk step reads back from raw (blocks as JSON) chunks exactly like the reader's output."""
    day = dt.date(2026, 11, 24)
    docs = list({d.doc_id: d for d in reversed(shipped_docs())}.values())  # one revision per id, as in a partition
    raw = pipeline.ingest(get_dataset("docs"), day, docs, []).table
    back = pipeline.documents_from_raw(raw)
    assert [d.blocks for d in back] == [d.blocks for d in docs]
    for a, b in zip(docs, back):
        assert [(x.section_id, x.spans, x.metadata) for x in chunk_markdown(a)] == [
            (x.section_id, x.spans, x.metadata) for x in chunk_markdown(b)
        ]
    assert blocks_from_json(blocks_to_json(docs[0].blocks)) == docs[0].blocks


# -- properties over what the project ships ---------------------------------------------------


def shipped_docs() -> list[SourceDocument]:
    docs = list(load_docs_day(FIXTURES).documents)
    for day in sorted(p for p in SAMPLE.iterdir() if p.is_dir()):
        docs.extend(load_docs_day(day).documents)
    return docs


@pytest.mark.parametrize("limits", [MarkdownLimits(), SEED_CHARS], ids=["tokens", "chars"])
def test_properties_on_shipped_markdown(limits: MarkdownLimits) -> None:
    for d in shipped_docs():
        first = chunk_markdown(d, limits)
        check_drafts(d, first)
        check_sections_tile(d)
        again = chunk_markdown(d, limits)
        assert [(x.section_id, x.spans, x.token_count) for x in again] == [
            (x.section_id, x.spans, x.token_count) for x in first
        ]


def test_contract_rows_pass_the_check_and_ids_are_stable() -> None:
    spec = get_dataset("docs")
    docs = shipped_docs()[:3]
    day = dt.date(2026, 11, 24)
    a = pipeline.chunk(spec, day, docs)
    b = pipeline.chunk(spec, day, list(reversed(docs)))
    report = validate_chunks(a.table, {d.doc_id: d.text for d in docs})
    assert report.passed, report.failures
    assert sorted(a.table.column("chunk_id").to_pylist()) == sorted(b.table.column("chunk_id").to_pylist())


@needs_corpus(HTTPX)
def test_properties_on_httpx_docs() -> None:
    docs = load_docs_day(HTTPX).documents
    assert len(docs) >= 23
    for d in docs:
        check_sections_tile(d)
        check_drafts(d, chunk_markdown(d))


_block = st.one_of(
    st.tuples(st.integers(1, 6), st.integers(0, 50)).map(lambda t: "#" * t[0] + f" Heading {t[1]}"),
    st.integers(0, 50).map(lambda i: f"Setext {i}\n" + ("===" if i % 2 else "---")),
    st.tuples(st.integers(0, 99), st.integers(1, 400)).map(lambda t: para(t[0], t[1])),
    st.integers(1, 80).map(lambda n: "```\n" + "\n".join(f"# not a header {i}" for i in range(n)) + "\n```"),
    st.integers(1, 120).map(lambda n: "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {para(i, 8)} |" for i in range(n))),
    st.just("---"),
    st.just("  indented line\n    deeper line"),
    st.just("<!--\n# Not a heading\n\n## nor this\n-->"),
    st.integers(1, 40).map(lambda n: "> # Quoted\n>\n> " + para(n, n)),
    st.integers(1, 40).map(lambda n: "- ## Listed\n\n  ```sh\n" + "\n".join(f"  # step {i}" for i in range(n)) + "\n  ```"),
    st.just("## Ünïcödé `code` *emph* — 日本語"),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(_block, min_size=1, max_size=25), front=st.booleans())
def test_properties_on_generated_markdown(blocks: list[str], front: bool) -> None:
    text = ("---\ntitle: gen\n---\n" if front else "") + "\n\n".join(blocks) + "\n"
    d = markdown_document("t.md", text)
    if not isinstance(d, SourceDocument):  # a body of blank lines only is a reject
        return
    check_sections_tile(d)
    # only the generated top-level headings are headings: none from a fence, comment, quote or list
    assert all(h.title.split()[0] in ("Heading", "Setext", "Ünïcödé") for h in structure(d).headers)
    check_drafts(d, chunk_markdown(d))
    check_drafts(d, chunk_markdown(d, MarkdownLimits(min_size=32, max_size=96, overlap=8)))
