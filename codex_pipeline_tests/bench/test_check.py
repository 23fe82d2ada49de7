"""bench/check.py's comparison with the recorded figures (the measuring itself needs valgrind: CI runs it)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_check", BENCH / "check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_a_rise_over_the_tolerance_fails_with_one_line_per_bench() -> None:
    check = _check()
    recorded = {"fallback[corpora]": {"ratio": 1.10}, "markdown[httpx]": {"ratio": 1.30}, "contract[samples]": {"ratio": 0.2}}
    found = {
        "fallback[corpora]": {"ratio": 1.16},  # +5.5%: fails
        "markdown[httpx]": {"ratio": 1.36},  # +4.6%: within 5%
        "contract[samples]": {"ratio": 0.15},  # faster
        "markdown[uv]": {"ratio": 9.0},  # nothing recorded: not a failure
    }
    lines = check.compare(recorded, found, 0.05)
    assert len(lines) == 1
    assert "fallback[corpora]" in lines[0] and "1.100" in lines[0] and "1.160" in lines[0] and "+5.5%" in lines[0]
    assert check.compare(recorded, found, 0.06) == []


def test_every_bundled_case_has_a_recorded_figure() -> None:
    """A checkout without the shared corpora still checks the bundled samples against a record."""
    check = _check()
    recorded = json.loads((BENCH / "baseline.json").read_text())["ratios"]
    samples = [c.key for c in check.cases() if c.corpus == "samples"]
    assert samples and all(key in recorded for key in samples)
    assert all(0 < fig["ratio"] < 10 for fig in recorded.values())
