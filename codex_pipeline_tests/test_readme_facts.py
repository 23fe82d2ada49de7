"""The README's checkable facts, checked: the demo's sample folder count and table columns, the scripts
it names, the sections that links and ``pyproject.toml`` point to, the Python versions CI runs.

A sibling of ``test_readme_layers.py`` (the layer map). What cannot be checked here (sizes, timings)
the README dates and says how it was measured.
"""

from __future__ import annotations

import re
from pathlib import Path

from codex_pipeline.cli.app import COUNTS_COLUMNS
from codex_pipeline.datasets.sample_data import sample_root

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(markdown: str) -> set[str]:
    """Every heading's text (any level), outside fenced code blocks."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    return {m.group(1).strip() for m in re.finditer(r"^#{1,6} (.+)$", prose, re.M)}


def test_the_sample_folder_count_is_what_the_demo_installs() -> None:
    said = re.findall(r"\((\d+) sample landing folders installed\)", README)
    days = [d for ds in sample_root().iterdir() if ds.is_dir() for d in ds.iterdir() if d.is_dir()]
    assert said == [str(len(days))], f"README says {said}; codex_pipeline/sample_landing has {len(days)} day folders"


def test_the_demo_table_shows_the_columns_the_demo_prints() -> None:
    block = README.split("codex.civic_intelligence_chunks:\n", 1)[1]
    assert block.splitlines()[0].split() == COUNTS_COLUMNS


def test_every_script_the_readme_names_exists_and_every_install_script_is_named() -> None:
    named = set(re.findall(r"scripts/([\w.-]+\.(?:sh|py))", README))
    assert named, "the README names no script"
    missing = sorted(n for n in named if not (ROOT / "scripts" / n).is_file())
    assert not missing, f"README names scripts that do not exist: {missing}"
    installs = {p.name for p in (ROOT / "scripts").glob("install_*.sh")}
    assert installs, "no scripts/install_*.sh"
    assert not installs - named, f"install scripts the README does not name: {sorted(installs - named)}"


def test_the_readme_sections_that_links_and_pyproject_point_to_exist() -> None:
    anchors = {github_anchor(h) for h in headings(README)}
    linked = set(re.findall(r"\]\(#([\w-]+)\)", README))
    assert linked, "the README links to none of its sections"
    assert not linked - anchors, f"README links to sections it does not have: {sorted(linked - anchors)}"
    pyproject = (ROOT / "pyproject.toml").read_text()
    pointed = set(re.findall(r'README "([^"]+)"', pyproject))
    assert not pointed - headings(README), f"pyproject.toml points to README sections that do not exist: {pointed}"


def test_the_anchor_and_heading_readers() -> None:
    assert github_anchor("Run the demo") == "run-the-demo" and github_anchor("What's new?") == "whats-new"
    assert headings("# A\n```\n# not a heading\n```\n## B c\n") == {"A", "B c"}


def test_every_python_the_readme_supports_is_run_by_ci() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    ranges = set(re.findall(r"CPython 3\.(\d+) to 3\.(\d+)", README))
    assert ranges, "the README states no supported Python range"
    for low, high in ranges:
        for minor in range(int(low), int(high) + 1):
            assert f"find_python.sh 3.{minor}" in ci, f"README supports 3.{minor}; .ci/run does not find it"
