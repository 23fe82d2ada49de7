"""A short write while saving an array (what a full disk does) names the file and the free bytes, as ENOSPC.

The disk is "filled" for one child process with a file size limit (RLIMIT_FSIZE, SIGXFSZ ignored):
``fwrite`` then stops short exactly as on a full disk, with numpy's bare "N requested and M written".
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from codex_pipeline.warehouse.array_files import save_array

CHILD = """
import json, resource, signal, sys
from pathlib import Path
import numpy as np
from codex_pipeline.warehouse.array_files import save_array
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (8192, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    save_array(Path(sys.argv[1]), np.arange(100_000, dtype=np.int64))
except OSError as exc:
    print(json.dumps({"errno": exc.errno, "filename": exc.filename, "message": str(exc), "cause": str(exc.__cause__)}))
"""


def test_a_short_write_names_the_file_and_the_free_bytes(tmp_path: Path) -> None:
    target = tmp_path / "indptr.npy"
    done = subprocess.run([sys.executable, "-c", CHILD, str(target)], capture_output=True, text=True, timeout=120)
    got = json.loads(done.stdout)
    assert "requested and" in got["cause"]  # what numpy said: no errno, no path
    assert got["errno"] == errno.ENOSPC and got["filename"] == str(target)
    assert "bytes written" in got["message"] and "bytes free on that disk" in got["message"]
    assert "\n" not in got["message"]


def test_an_array_saves_as_np_save_does(tmp_path: Path) -> None:
    save_array(tmp_path / "a.npy", np.arange(5, dtype=np.int32))
    assert np.load(tmp_path / "a.npy").tolist() == [0, 1, 2, 3, 4]
