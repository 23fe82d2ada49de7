"""NumPy arrays saved so that a full disk is reported with the file and the free bytes.

``np.save`` writes through C ``fwrite``; when the disk fills it raises
``OSError: 5026 requested and 2016 written``, with no errno, no path and no hint of the
disk. :func:`save_array` turns that into an ``ENOSPC`` :class:`OSError` carrying the file
name, so the CLI's one-line storage message (``no space left writing <file> …``) names it.
"""

from __future__ import annotations

import errno
import re
import shutil
from pathlib import Path

import numpy as np

_SHORT_WRITE = re.compile(r"(\d+) requested and (\d+) written")
NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def save_array(path: Path, array: np.ndarray) -> None:
    """``np.save(path, array)``; a short or failed write raises an OSError naming ``path`` and the disk's free bytes."""
    try:
        np.save(path, array)
    except OSError as exc:
        raise write_failure(exc, path) from exc


def write_failure(exc: OSError, path: Path) -> OSError:
    """``exc`` with ``path`` as its file name; a short write (numpy's "N requested and M written") becomes ENOSPC
    with the counts and the free bytes in its message."""
    short = _SHORT_WRITE.search(str(exc))
    if short is None and exc.errno not in NO_SPACE:
        return exc if exc.filename else OSError(exc.errno, exc.strerror or str(exc), str(path))
    free = _free_bytes(path)
    what = (f"{int(short.group(2)):,} of {int(short.group(1)):,} bytes written" if short
            else exc.strerror or "write failed")
    return OSError(exc.errno if exc.errno in NO_SPACE else errno.ENOSPC,
                   f"{what}; {free} free on that disk (a full disk, a quota or a file size limit)", str(path))


def _free_bytes(path: Path) -> str:
    try:
        return f"{shutil.disk_usage(path.parent).free:,} bytes"
    except OSError:
        return "unknown bytes"
