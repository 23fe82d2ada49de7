"""docs landing: Markdown files, record ids, front matter and rejects."""

from __future__ import annotations

from pathlib import Path

from codex_pipeline.sources.markdown import load_docs_day, split_front_matter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "docs"
SAMPLE = Path(__file__).resolve().parents[2] / "codex_pipeline" / "sample_landing" / "docs"


def test_yaml_front_matter_is_parsed_and_dates_become_strings() -> None:
    text = "---\ntitle: T\nreviewed: 2026-01-15\ntags: [a, b]\n---\n# Body\n"
    fm = split_front_matter(text)
    assert fm.format == "yaml"
    assert fm.data == {"title": "T", "reviewed": "2026-01-15", "tags": ["a", "b"]}
    assert text[fm.end :] == "# Body\n"


def test_toml_front_matter() -> None:
    text = '+++\ntitle = "API"\nversion = 2\n+++\n\nbody\n'
    fm = split_front_matter(text)
    assert (fm.format, fm.data, text[fm.end :]) == ("toml", {"title": "API", "version": 2}, "\nbody\n")


def test_unclosed_dashes_are_a_thematic_break_not_front_matter() -> None:
    text = "---\nJust a rule at the top, never closed.\n"
    fm = split_front_matter(text)
    assert (fm.end, fm.format) == (0, None)


def test_no_front_matter() -> None:
    assert split_front_matter("# Title\n").end == 0


def test_invalid_front_matter_is_a_reason() -> None:
    fm = split_front_matter("---\ntitle: [unclosed\n---\nbody\n")
    assert fm.error and fm.error.startswith("invalid YAML front matter")
    fm = split_front_matter("---\n- a list\n---\nbody\n")
    assert fm.error == "YAML front matter must be a mapping, got list"


def test_load_fixture_day_record_ids_are_relative_paths() -> None:
    result = load_docs_day(FIXTURES)
    assert result.rejects == []
    ids = sorted(d.record_id for d in result.documents)
    assert ids == ["api/reference.mdx", "big-table.md", "guide.md"]
    guide = next(d for d in result.documents if d.record_id == "guide.md")
    assert guide.doc_id == "urn:aprs:docs:guide.md"
    assert guide.title == "Field guide"
    assert guide.payload["front_matter"]["tags"] == ["fixture", "markdown"]
    assert guide.payload["front_matter_format"] == "yaml"
    # the canonical text is the file itself, front matter included, so offsets match the landed file
    assert guide.text == (FIXTURES / "guide.md").read_text()
    assert guide.text[guide.payload["body_start"] :].lstrip().startswith("Field guide\n===")
    api = next(d for d in result.documents if d.record_id == "api/reference.mdx")
    assert api.title == "API reference" and api.payload["front_matter_format"] == "toml"


def test_title_falls_back_to_first_h1_then_file_name(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("intro\n\n# The Title\n\ntext\n")
    (tmp_path / "b_c.md").write_text("no headers at all\n")
    docs = {d.record_id: d for d in load_docs_day(tmp_path).documents}
    assert docs["a.md"].title == "The Title"
    assert docs["b_c.md"].title == "b c"


def test_rejects_name_the_file_and_reason(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not markdown\n")
    (tmp_path / "empty.md").write_text("---\ntitle: only front matter\n---\n\n")
    (tmp_path / "bad.md").write_text("---\ntitle: [oops\n---\nbody\n")
    (tmp_path / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    (tmp_path / "ok.md").write_text("# Fine\n")
    result = load_docs_day(tmp_path)
    reasons = {r.source_file: r.reason for r in result.rejects}
    assert [d.record_id for d in result.documents] == ["ok.md"]
    assert reasons["notes.txt"].startswith("unsupported file type '.txt'")
    assert reasons["empty.md"].startswith("empty document")
    assert reasons["bad.md"].startswith("invalid YAML front matter")
    assert reasons["latin1.md"].startswith("invalid UTF-8")


def test_sample_landing_days_load() -> None:
    for day in ("2026-11-24", "2026-11-25", "2026-11-26"):
        result = load_docs_day(SAMPLE / day)
        assert result.documents, day
    ids = [d.record_id for d in load_docs_day(SAMPLE / "2026-11-24").documents]
    assert ids == ["getting-started.md", "guides/pagination.mdx"]
    assert [r.source_file for r in load_docs_day(SAMPLE / "2026-11-24").rejects] == ["notes.txt"]
