"""Files written all or nothing, and a lock across processes: what the Parquet store and the catalog share.

Kept apart from :mod:`~codex_pipeline.warehouse.storage` so that the catalog
(:mod:`~codex_pipeline.warehouse.catalog`) can use them without importing the store
that re-exports it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

TEMP_SUFFIX = ".tmp"
"""Temp files are ``.<target name>.<pid>.<random>.tmp`` beside their target."""


def temp_path(path: Path) -> Path:
    """A fresh temp path beside ``path`` (same folder: the rename that publishes it is atomic)."""
    return path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}"


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


FILE_MODE = _umask_mode()
"""Files are created ``0666 & ~umask`` (0644 usually), like any tool's, not mkstemp's 0600."""


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temp path beside ``path`` to write, renamed over ``path`` on success (mode per umask)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    try:
        yield tmp
        if tmp.exists():
            os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def file_lock(lock_path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``lock_path`` (created, with its folder), held across processes."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
