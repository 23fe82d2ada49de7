"""Without the ``[serve]`` extra, ``codex serve`` says so once, naming the missing module."""

from __future__ import annotations

import argparse
import sys

import pytest

from codex_pipeline.cli.errors import CliError
from codex_pipeline.cli.serve_command import cmd_serve


@pytest.mark.parametrize("missing", ["fastapi", "uvicorn"])
def test_the_missing_extra_is_one_sentence_naming_the_module(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    for cached in ("codex_pipeline.serve.app", "codex_pipeline.serve.viewer"):
        monkeypatch.delitem(sys.modules, cached, raising=False)  # imported afresh, so the guard runs
    monkeypatch.setitem(sys.modules, missing, None)  # `import missing` now fails as if not installed
    with pytest.raises(CliError) as err:
        cmd_serve(argparse.Namespace(workers=1, rebuild=False))
    message = str(err.value)
    assert message == (f"codex serve needs FastAPI and uvicorn (no module '{missing}'): "
                       "pip install 'codex-pipeline[serve]'")
