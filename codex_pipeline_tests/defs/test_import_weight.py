"""Every Dagster process imports the definitions: a run worker per run, the code server, the
daemon, each Celery worker. The heavy libraries that only asset bodies use must load on first
use, or each run pays for them (``bench/bench_scale_out.py`` counts the run workers' CPU)."""

from __future__ import annotations

import json
import subprocess
import sys

# half of the ~2 CPU-seconds ``import codex_pipeline.defs`` added to ``import dagster`` went to
# pandas (pyarrow's first pa.array() imports it too), scipy and email.policy, until they moved
# into the functions that use them
ON_FIRST_USE = ("pandas", "pandera", "scipy", "email.policy", "numba", "bm25s", "torch", "sentence_transformers",
                "openvino", "onnx", "tokenizers")


def test_importing_the_definitions_loads_no_library_that_only_asset_bodies_use() -> None:
    code = (
        "import json, sys\n"
        "import codex_pipeline.defs\n"
        f"print(json.dumps(sorted(m for m in {sorted(ON_FIRST_USE)!r} if m in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == [], f"import codex_pipeline.defs loads {loaded}: import them where they are used"
