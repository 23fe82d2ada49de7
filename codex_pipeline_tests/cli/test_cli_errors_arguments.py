"""Argument mistakes of every command are one line naming the option and the fix (no usage block,
no traceback), caught before any data is read (issue 29, item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_pipeline.cli import main
from codex_pipeline_tests.cli.test_cli_errors_search import assert_one_line


@pytest.mark.parametrize(("argv", "names"), [
    (["search", "--from", "notadate", "water"], ["codex search: error: argument --from", "'notadate'", "--help"]),
    (["search", "--to", "2026-13-01", "water"], ["argument --to", "'2026-13-01'", "YYYY-MM-DD"]),
    (["search", "-k", "0", "water"], ["argument -k", "at least 1"]),
    (["search", "--embedder", "nope", "water"], ["codex search:", "'nope'", "--embedder", "local or openai"]),
    (["search", "--mode", "fuzzy", "water"], ["argument --mode", "'fuzzy'"]),
    (["validate", "--day", "notaday"], ["codex validate: error: argument --day", "'notaday'"]),
    (["materialize", "notaday"], ["codex materialize:", "'notaday'", "YYYY-MM-DD"]),
    (["inspect", "summary"], ["codex inspect summary: error:", "--dataset"]),
    (["nosuchcommand"], ["codex: error: argument command", "'nosuchcommand'"]),
])
def test_a_bad_argument_is_one_line(argv: list[str], names: list[str], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["--data-dir", str(tmp_path / "data"), *argv])
    assert_one_line(rc, capsys.readouterr().err, *names)
    assert not (tmp_path / "data").exists()  # refused before anything was created


def test_an_unknown_embedder_in_the_environment_names_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_EMBEDDER", "bogus")
    rc = main(["--data-dir", str(tmp_path / "data"), "search", "water"])
    # read once, before any command runs: every command says it the same way
    assert_one_line(rc, capsys.readouterr().err, "codex:", "CODEX_EMBEDDER='bogus'", "local, openai")


def test_a_missing_gold_file_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = tmp_path / "nope.jsonl"
    rc = main(["--data-dir", str(tmp_path / "data"), "eval", str(gold), "--corpus", str(tmp_path),
               "--dataset", "narrative"])
    assert_one_line(rc, capsys.readouterr().err, "codex eval:", str(gold), "No such file", "check the path")


def test_an_unexpected_error_is_one_line_naming_its_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug still ends in one line that says so and how to get the traceback."""
    import codex_pipeline.cli.search_command as search

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr(search, "Retriever", broken)
    rc = main(["--data-dir", str(tmp_path / "data"), "search", "--mode", "bm25", "water"])
    assert_one_line(rc, capsys.readouterr().err, "codex search: unexpected ZeroDivisionError: division by zero",
                    "python -X dev")
