"""The README's layer map (the block under "How it fits together") says what the layer test enforces.

The map lists every layer of ``codex_pipeline/`` once, in an order where each layer comes after
every layer it may import; ``ALLOWED`` in ``test_layers.py`` is the table of what each may import.
A layer added to one and not the other, or a map line out of order, fails here.
"""

from __future__ import annotations

import re

from codex_pipeline_tests.test_layers import ALLOWED, PACKAGE_DIR

README = PACKAGE_DIR.parent / "README.md"
SECTION = "## How it fits together"
# a map line: optional tree drawing, then `name/` and its description
_LINE = re.compile(r"^[\s│├└─]*([a-z_]+)/(?:\s|$)")


def map_layers(readme: str) -> list[str]:
    """The layers the README's map names, in its order (the first fenced block after SECTION)."""
    if SECTION not in readme:
        raise AssertionError(f"README.md has no {SECTION!r} section")
    after = readme.split(SECTION, 1)[1]
    fence = re.search(r"^```[^\n]*\n(.*?)^```", after, re.S | re.M)
    if fence is None:
        raise AssertionError(f"no ``` block under {SECTION!r} in README.md")
    layers = []
    for line in fence.group(1).splitlines():
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            raise AssertionError(f"README layer map: a line that names no layer: {line!r}")
        layers.append(m.group(1))
    return layers


def differences(layers: list[str], allowed: dict[str, set[str]]) -> list[str]:
    """What the map and the table disagree on, one line each (empty: they agree)."""
    out = []
    seen = [name for i, name in enumerate(layers) if name in layers[:i]]
    if seen:
        out.append(f"listed twice in the README map: {sorted(set(seen))}")
    if missing := sorted(set(allowed) - set(layers)):
        out.append(f"in ALLOWED (test_layers.py), missing from the README map: {missing}")
    if extra := sorted(set(layers) - set(allowed)):
        out.append(f"in the README map, missing from ALLOWED (test_layers.py): {extra}")
    for i, name in enumerate(layers):
        below = sorted((allowed.get(name, set()) - {name}) & set(layers[i:]))
        if below:
            out.append(f"README map: {name}/ may import {below}, which the map lists after it")
    return out


def _packages() -> set[str]:
    return {p.name for p in PACKAGE_DIR.iterdir() if p.is_dir() and any(p.glob("*.py"))}


def test_the_readme_map_and_the_layer_table_name_the_same_layers() -> None:
    bad = differences(map_layers(README.read_text(encoding="utf-8")), ALLOWED)
    assert not bad, "README.md's layer map and ALLOWED disagree:\n" + "\n".join(bad)


def test_every_package_is_on_the_readme_map() -> None:
    missing = sorted(_packages() - set(map_layers(README.read_text(encoding="utf-8"))))
    assert not missing, f"packages of codex_pipeline/ missing from README.md's layer map: {missing}"


def test_the_comparison_can_fail() -> None:
    """A layer missing, one unknown, one twice, and one listed above what it imports are each reported."""
    readme = f"{SECTION}\n\ntext\n\n```\ncore/  a\n  ├── sources/  b\nwarehouse/ c\nghost/  d\nsources/ e\n```\n"
    allowed = {"core": {"core"}, "sources": {"core", "sources"}, "warehouse": {"core", "warehouse"},
               "retrieval": {"core", "retrieval"}}
    layers = map_layers(readme)
    assert layers == ["core", "sources", "warehouse", "ghost", "sources"]
    bad = differences(layers, allowed)
    assert bad == [
        "listed twice in the README map: ['sources']",
        "in ALLOWED (test_layers.py), missing from the README map: ['retrieval']",
        "in the README map, missing from ALLOWED (test_layers.py): ['ghost']",
    ], bad
    assert differences(["sources", "core", "warehouse", "retrieval"], allowed) == [
        "README map: sources/ may import ['core'], which the map lists after it"]
    assert differences(["core", "sources", "warehouse", "retrieval"], allowed) == []
