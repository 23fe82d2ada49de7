"""deploy/codex-serve.service runs `codex serve` as the CLI parses it: on loopback, the key from the environment."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

from codex_pipeline.cli.app import build_parser
from codex_pipeline.cli.serve_command import API_KEY_ENV

UNIT = Path(__file__).resolve().parents[2] / "deploy" / "codex-serve.service"


def test_the_unit_runs_codex_serve_on_loopback_with_the_key_from_the_environment() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(UNIT.read_text())
    argv = shlex.split(unit["Service"]["ExecStart"])
    assert Path(argv[0]).name == "codex" and argv[1] == "serve"
    args = build_parser().parse_args(argv[1:])  # every flag exists
    assert args.host == "127.0.0.1" and args.api_key_env == API_KEY_ENV
    assert unit["Service"]["EnvironmentFile"] and unit["Service"]["NoNewPrivileges"] == "yes"
