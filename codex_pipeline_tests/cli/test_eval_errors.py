"""`codex eval` as a tool (issue 26): it refuses to score nothing, shows progress, breaks scores down per source.

Real Dagster materializations of a tiny Markdown corpus through the CLI, with the fake
embedder standing in for MiniLM (the wiring is under test, not the vectors). Before
issue 26 each error case printed all-zero scores with exit code 0, or a traceback.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from codex_pipeline.cli import main
from codex_pipeline.evaluation.checks import NothingToScore, check_propositions
from codex_pipeline.evaluation.gold import Question, Reference
from codex_pipeline.evaluation.metrics import Score, summarize
from codex_pipeline.evaluation.runner import CorpusPart, Evaluation, QuestionResult, source_group
from codex_pipeline_tests.fakes import FakeEmbedder

PAGES = {
    "guide/cache.md": "# Cache\n\nThe cache lives in the data folder.\n\n## Cleaning\n\nRun the prune command "
                      "weekly to drop unused cache entries older than thirty days.\n",
    "guide/install.md": "# Install\n\nInstall the tool with the standalone installer.\n\n## Upgrading\n\n"
                        "The self update command replaces the binary with the newest release.\n",
}
QUESTIONS = [("How often should I prune the cache?", "guide/cache.md", "Run the prune command weekly"),
             ("How do I upgrade the tool?", "guide/install.md", "The self update command replaces the binary")]


def _corpus(root: Path) -> tuple[Path, Path]:
    corpus = root / "corpus"
    for rel, text in PAGES.items():
        (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
        (corpus / rel).write_text(text)
    lines = []
    for q, source, words in QUESTIONS:
        start = PAGES[source].index(words)
        lines.append(json.dumps({"question": q, "references": [
            {"source": source, "start": start, "end": start + len(words)}]}))
    gold = root / "gold.jsonl"
    gold.write_text("\n".join(lines) + "\n")
    return corpus, gold


@contextlib.contextmanager
def _fake_models() -> Iterator[None]:
    """The fake embedder for the materialization's embedding resource and for the query embedder."""
    from codex_pipeline_tests.fakes import FakeEmbedding

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("codex_pipeline.defs.resources.EmbeddingSettings", FakeEmbedding)
        mp.setattr("codex_pipeline.cli.eval_command.query_embedder", lambda kind, settings: FakeEmbedder())
        yield


def _eval(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with _fake_models(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["eval", *argv])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, tuple[int, str, str]]:
    """The corpus evaluated once as ``docs`` into a kept work dir: (corpus, gold, work dir, (rc, stdout, stderr))."""
    root = tmp_path_factory.mktemp("eval")
    corpus, gold = _corpus(root)
    work = root / "work"
    run = _eval(str(gold), "--corpus", str(corpus), "--dataset", "docs", "--work-dir", str(work), "--per-source")
    return corpus, gold, work, run


def _last_line_error(rc: int, out: str, err: str, *names: str) -> str:
    """Exit 1, no scores printed, no traceback; the last stderr line is the one error line, naming ``names``."""
    assert rc == 1, (out, err)
    assert "recall" not in out and "Traceback" not in err, (out, err)
    line = err.rstrip("\n").splitlines()[-1]
    assert line.startswith("codex eval: "), err
    for name in names:
        assert name in line, (name, line)
    return line


def test_a_materialized_corpus_scores_with_progress_and_per_source(built: tuple) -> None:
    _, _, _, (rc, out, err) = built
    assert rc == 0, err
    assert "docs__chunks started" in err and "docs__embeddings done in" in err  # one line per asset step
    assert "hit@5" in out and "per source" in out
    assert "guide/cache.md" in out and "guide/install.md" in out


def test_json_is_quiet_and_carries_the_per_source_breakdown(built: tuple) -> None:
    corpus, gold, work, _ = built
    rc, out, err = _eval(str(gold), "--corpus", str(corpus), "--dataset", "docs", "--work-dir", str(work),
                         "--no-materialize", "--per-source", "--json")
    assert rc == 0, err
    report = json.loads(out)
    assert set(report["per_source"]) == {"guide/cache.md", "guide/install.md"}
    assert all(s["questions"] == 1 for s in report["per_source"].values())
    assert report["hit_at_k"] > 0
    assert "started" not in err  # no progress lines with --json


def test_units_that_were_never_built_are_an_error(built: tuple) -> None:
    corpus, gold, work, _ = built
    rc, out, err = _eval(str(gold), "--corpus", str(corpus), "--dataset", "docs", "--work-dir", str(work),
                         "--no-materialize", "--units", "propositions")
    _last_line_error(rc, out, err, "--units propositions", "no propositions for docs", str(work),
                     "without --no-materialize")


def test_no_materialize_on_an_empty_work_dir_is_one_line(tmp_path: Path) -> None:
    corpus, gold = _corpus(tmp_path)
    rc, out, err = _eval(str(gold), "--corpus", str(corpus), "--dataset", "docs", "--work-dir", str(tmp_path / "empty"),
                         "--no-materialize")
    assert err.count("\n") == 1, err  # nothing else: no traceback, no "a bug in codex"
    _last_line_error(rc, out, err, "--no-materialize", "docs", "run once without --no-materialize")


def test_every_document_rejected_names_the_rejects_table_and_count(tmp_path: Path) -> None:
    corpus, gold = _corpus(tmp_path)  # Markdown landed into the council transcripts dataset: every file rejected
    rc, out, err = _eval(str(gold), "--corpus", str(corpus), "--dataset", "civic_intelligence",
                         "--work-dir", str(tmp_path / "work"))
    _last_line_error(rc, out, err, "every document landed into civic_intelligence was rejected",
                     "2 row(s) in codex.civic_intelligence_rejects", "unsupported file type '.md'",
                     f"CODEX_DATA_DIR={tmp_path / 'work'} codex query")
    rc, out, err = _eval(str(gold), "--corpus", str(corpus), "--dataset", "civic_intelligence")
    _last_line_error(rc, out, err, "rerun with --work-dir DIR")  # a temporary data dir is gone: say how to keep it


def test_include_lands_only_the_matching_files(tmp_path: Path) -> None:
    corpus, gold = _corpus(tmp_path)
    rc, out, err = _eval(str(gold), "--corpus", str(corpus), "--dataset", "docs", "--include", "*.txt")
    _last_line_error(rc, out, err, "docs has no chunks", "--include")


def test_dataset_folder_dot_is_the_corpus_itself() -> None:
    """``--dataset documents=.`` once keyed every file ``./name`` and scored 0 on every question."""
    assert CorpusPart.parse("documents=.") == CorpusPart("documents") == CorpusPart.parse("documents=./")
    assert CorpusPart.parse("docs=./markdown/uv/").subdir == "markdown/uv" == CorpusPart.parse("docs=markdown/x/../uv").subdir


def test_propositions_check_and_pooled_groups() -> None:
    with pytest.raises(NothingToScore, match="use --units chunks"):
        check_propositions({"docs": 0, "email_threads": 12}, Path("/data"), reused=False)
    check_propositions({"docs": 3}, Path("/data"), reused=True)
    parts = [CorpusPart("docs", "markdown/uv"), CorpusPart("narrative", "council_captions/huntsville-al")]
    q = [Question(1, "a", (Reference("markdown/uv/concepts/cache.md", 0, 4),)),
         Question(2, "b", (Reference("council_captions/huntsville-al/x.captions.txt", 0, 4),)),
         Question(3, "c", (Reference("markdown/uv/index.md", 0, 4),))]
    scores = [Score(1.0, 0.5, 0.5, True, 8, 4), Score(0.0, 0.0, 0.0, False, 8, 4), Score(0.5, 0.25, 0.2, True, 8, 4)]
    ev = Evaluation(summarize(scores), [QuestionResult(a, s) for a, s in zip(q, scores)], 5, "hybrid", "evidence", 0)
    groups = ev.per_source(source_group(parts))
    assert list(groups) == ["council_captions/huntsville-al", "markdown/uv"]
    assert groups["markdown/uv"].questions == 2 and groups["markdown/uv"].recall == pytest.approx(75.0)
    assert set(ev.per_source(source_group(parts[:1]))) == {q[0].references[0].source, q[1].references[0].source,
                                                          q[2].references[0].source}  # one dataset: per file
