"""The two Markdown parsers (markdown-it.rs, compiled; markdown-it-py, the fallback) give the same
documents, so the same chunks: on every bundled sample, the fixtures, the shared corpora and
generated Markdown.

The compiled parser has no wheels past CPython 3.12: there the comparisons skip and the rest of
the suite runs on the fallback alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codex_pipeline.chunkers.markdown import chunk_markdown
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.sources import markdown_structure
from codex_pipeline.sources.markdown import load_docs_day, markdown_document
from codex_pipeline.sources.markdown_structure import PY, PYRS, available_parsers, parse_blocks
from codex_pipeline_tests.conftest import CORPORA, needs_corpus

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "codex_pipeline_tests" / "fixtures" / "docs"
SAMPLE = ROOT / "codex_pipeline" / "sample_landing" / "docs"
MARKDOWN = CORPORA / "markdown"

both = pytest.mark.skipif(PYRS not in available_parsers(), reason="markdown-it-pyrs not installed (CPython > 3.12)")


def same_days(*days: Path) -> int:
    """Read every day with each parser; documents, rejects and chunks must be equal. Returns the count."""
    n = 0
    for day in days:
        fast, fallback = load_docs_day(day, parser=PYRS), load_docs_day(day, parser=PY)
        assert fast.rejects == fallback.rejects, day
        assert [d.record_id for d in fast.documents] == [d.record_id for d in fallback.documents], day
        for a, b in zip(fast.documents, fallback.documents):
            assert a == b, (day, a.record_id, [x for x in a.blocks if x not in b.blocks], [x for x in b.blocks if x not in a.blocks])
            assert chunk_markdown(a) == chunk_markdown(b), (day, a.record_id)
            n += 1
    return n


@both
def test_parsers_agree_on_samples_and_fixtures() -> None:
    assert same_days(FIXTURES, *sorted(p for p in SAMPLE.iterdir() if p.is_dir())) >= 9


@pytest.mark.slow
@both
@needs_corpus(MARKDOWN)
def test_parsers_agree_on_shared_corpora() -> None:
    days = sorted(p for p in MARKDOWN.iterdir() if p.is_dir())
    assert days, MARKDOWN
    assert same_days(*days) >= 23


# The hard cases of both ports: headings in fences, comments, HTML blocks, lists and quotes, setext
# underlines against thematic breaks and tables, unclosed fences in containers, a last line with
# no newline, reference links defined later, entities, escapes, autolinks, NULs. Left out, where
# the two ports differ (neither appears in the samples or the corpora): a one-column table
# (``| x |`` over ``---`` is a setext heading to markdown-it.rs, a table to markdown-it-py), a
# list marker with nothing after it (``- ``) right under other content, and a table that starts
# on a block quote's lazy continuation line (filtered below).
_LINE = st.sampled_from([
    "# h", "## h2 *x*", "### h3 `c`", "#### h4", "#", "# h #", "text é", "Setext", "===", "---", "***", "* * *",
    "```", "~~~", "```py", "  ```", "   ```", "    code", "      code", "\t# tab", "  # two", "- item", "- # li",
    "- ```", "   - ~~~", "1. one", "1) x", "   1. y", "  - nested", "> quote", "> # qh", "> ```", ">", "> > deep",
    ">     code", "<!--", "-->", "<!-- # c -->", "<div>", "</div>", "<details>", "<pre>", "</pre>", "<?x", "?>",
    "| a | b |", "|---|---|", "| 1 | 2 |", "a | b", "--|--", "[ref]: /url", '[r]: <u> "t"', "## [r] ![i][r]",
    "# [ref] <http://a.b/%C3%A9> &copy; \\#", "# ![a *b*](x) `` c ` ``", "Title {#id}", "日本語 # x",
    "\u00a0# nbsp", "\x00 # nul", "#\t tab #", "a\\", "  ", "\t", "", "", "",
])


def lazy_table(lines: list[str]) -> bool:
    """A ``|`` line in the same paragraph as a ``>`` line above it."""
    quoted = False
    for line in lines:
        if not line.strip():
            quoted = False
        elif line.lstrip().startswith(">"):
            quoted = True
        elif quoted and "|" in line:
            return True
    return False


@both
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(lines=st.lists(_LINE, min_size=1, max_size=40), end=st.sampled_from(["\n", "", "\n\n"]))
def test_parsers_agree_on_generated_markdown(lines: list[str], end: str) -> None:
    if lazy_table(lines):
        return
    text = "\n".join(lines) + end
    assert parse_blocks(text, 0, PYRS) == parse_blocks(text, 0, PY)


def test_fallback_reads_structure_and_titles() -> None:
    """The fallback alone (what Python 3.13 runs): ATX and setext headings, titles, code, tables, breaks."""
    text = ("---\ntitle: T\n---\n# The `Client` *class* {#client}\n\nSee <http://a.b/%C3%A9> &amp; [it][r].\n\n"
            "Two\nlines\n---\n\n- ```\n  # not a heading\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n***\n"
            "## [r] ![alt *x*](i.png)\n\n[r]: /url\n```\nunclosed\n  ")
    d = markdown_document("t.md", text, parser=PY)
    assert isinstance(d, SourceDocument)
    got = [(b.kind, d.text[b.start : b.end], b.key, b.meta.get("title")) for b in d.blocks if b.kind not in ("body", "front_matter")]
    assert got == [
        ("heading", "# The `Client` *class* {#client}\n", "1", "The Client class"),
        ("heading", "Two\nlines\n---\n", "2", "Two lines"),
        ("code", "- ```\n  # not a heading\n", "fenced", None),
        ("table", "| a | b |\n|---|---|\n| 1 | 2 |\n", "", None),
        ("hr", "***\n", "", None),
        ("heading", "## [r] ![alt *x*](i.png)\n", "2", "r alt x"),
        ("code", "```\nunclosed\n  ", "fenced", None),
    ]


def test_parser_is_chosen_by_name_or_for_the_process() -> None:
    assert PY in available_parsers()
    text = "# A\n"
    with pytest.raises(ValueError, match="unknown Markdown parser 'mistune'"):
        parse_blocks(text, 0, "mistune")
    try:
        markdown_structure.set_default_parser(PY)
        assert markdown_structure.default_parser() == PY
    finally:
        markdown_structure.set_default_parser(None)
    assert markdown_structure.default_parser() == available_parsers()[0]
    with pytest.raises(ValueError, match="unknown Markdown parser"):
        markdown_structure.set_default_parser("mistune")
