"""A broken ``$CODEX_MAPPINGS_DIR`` is named by every command that checks a dataset name, not hidden as an invalid name."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex_pipeline.cli import main
from codex_pipeline_tests.cli.test_cli_errors_search import assert_one_line


@pytest.mark.parametrize("broken", ["missing", "bad-mapping"])
def test_a_broken_mappings_folder_is_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str], broken: str) -> None:
    folder = tmp_path / "mappings"
    if broken == "bad-mapping":
        folder.mkdir()
        (folder / "city.yaml").write_text("dataset: city_permits\nkind: nonsense\n")
    monkeypatch.setenv("CODEX_MAPPINGS_DIR", str(folder))
    try:
        code = main(["--data-dir", str(tmp_path / "data"), "search", "a deck", "--dataset", "narrative"])
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert_one_line(code, err, str(folder) if broken == "missing" else "city.yaml")
    assert "invalid chunked_dataset value" not in err
