"""The lanes' rules for the shared corpora: a corpus test skips without its corpus, fails under CI=true,
is slow, and every test that reads the corpora says so through ``needs_corpus``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from codex_pipeline_tests import conftest
from codex_pipeline_tests.conftest import CORPORA, TESTS, in_ci, needs_corpus, require_corpus

ABSENT = CORPORA / "no-such-corpus" / "file.txt"


class _Item:
    """What the hooks read of a test: its markers."""

    def __init__(self, *marks: pytest.MarkDecorator) -> None:
        self.marks = [m.mark for m in marks]
        self.path = Path(__file__)

    def iter_markers(self, name: str) -> Iterator[pytest.Mark]:
        return (m for m in self.marks if m.name == name)

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return next(self.iter_markers(name), None)


def test_ci_is_read_from_the_ci_variable() -> None:
    assert in_ci({"CI": "true"}) and in_ci({"CI": "1"}) and in_ci({"CI": " True "})
    assert not in_ci({}) and not in_ci({"CI": ""}) and not in_ci({"CI": "false"})


def test_a_missing_corpus_skips_outside_ci_and_fails_in_ci(tmp_path: Path) -> None:
    with pytest.raises(pytest.skip.Exception, match=r"shared corpora not present: no-such-corpus/file\.txt"):
        require_corpus(ABSENT, ci=False)
    with pytest.raises(pytest.fail.Exception, match=r"no-such-corpus/file\.txt .*CI=true, so a corpus test fails"):
        require_corpus(ABSENT, ci=True)
    require_corpus(tmp_path, ci=True)  # present: nothing happens, in CI or not
    require_corpus(tmp_path, ci=False)


def test_the_hooks_skip_at_setup_and_fail_the_call_under_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing, present = _Item(needs_corpus(tmp_path, ABSENT)), _Item(needs_corpus(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        conftest.pytest_runtest_setup(missing)  # type: ignore[arg-type]
    conftest.pytest_runtest_call(missing)  # type: ignore[arg-type]
    monkeypatch.setenv("CI", "true")
    conftest.pytest_runtest_setup(missing)  # type: ignore[arg-type]
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        conftest.pytest_runtest_call(missing)  # type: ignore[arg-type]
    conftest.pytest_runtest_setup(present)  # type: ignore[arg-type]
    conftest.pytest_runtest_call(present)  # type: ignore[arg-type]
    assert conftest._reads_shared_corpora(missing) and not conftest._reads_shared_corpora(_Item())  # type: ignore[arg-type]


def test_corpus_tests_are_in_the_slow_lane() -> None:
    corpus_test, other = _Item(needs_corpus(ABSENT)), _Item(pytest.mark.skipif(True, reason="shared corpora"))
    corpus_test.path = other.path = TESTS / "sources" / "test_x.py"
    assert conftest.slow_reason(corpus_test) == "shared corpora"  # type: ignore[arg-type]
    assert conftest.slow_reason(other) is None  # type: ignore[arg-type]


# a path into the shared folder built by hand: "shared" / "corpora", "shared/corpora", parents[…] / "shared"
_BY_HAND = re.compile(r"""["']shared["']\s*/|["'][^"'\n]*shared/corpora""")


def test_every_test_reaches_the_corpora_through_conftest() -> None:
    """A test that builds its own path to ../shared/corpora would skip silently in CI: use
    ``conftest.CORPORA`` and ``@needs_corpus``."""
    by_hand = [f"{p.relative_to(TESTS)}:{n}" for p in sorted(TESTS.rglob("*.py"))
               if p.name != "conftest.py" and p != Path(__file__)
               for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if _BY_HAND.search(line)]
    assert not by_hand, f"paths to the shared corpora built outside conftest.CORPORA: {by_hand}"
    assert _BY_HAND.search('CORPUS = ROOT.parent / "shared" / "corpora" / "email"')
    assert _BY_HAND.search('X = HERE.parents[2].parent / "shared/corpora/pdf/a.pdf"')


def test_quick_tests_get_the_token_histogram_as_a_table() -> None:
    """The chunks step's histogram is its Markdown table here; explore/'s png_histogram test gets the PNG."""
    import pyarrow as pa

    from codex_pipeline.explore.inspector import token_histogram_markdown

    md = token_histogram_markdown(pa.table({"chunk_type": ["speaker_turn"], "token_count": [12]}), title="t")
    assert md.startswith("**t**"), md[:80]
    assert "data:image/png" not in md
