"""Dataset names from the command line, checked against the registry before any use.

A name typed after ``--dataset`` becomes a folder (``warehouse/<name>/…``, a lock file)
and a view name in SQL; only the registry's names are either, so a name like
``../../OTHER/narrative`` or ``x; DROP …`` is refused at parse time, before a file is
opened or a statement built. Every command that takes a dataset uses these as the
argparse ``type``.
"""

from __future__ import annotations

import argparse
import functools
import os

from codex_pipeline.datasets.registry import DATASETS

MAPPINGS_DIR_ENV = "CODEX_MAPPINGS_DIR"  # the code location reads it too (defs/environment.py)


@functools.cache
def _with_mappings() -> None:
    """Register the configured mapping folders' datasets, as the code location does on load."""
    add = getattr(DATASETS, "add_mapping_folder", None)
    for folder in (os.environ.get(MAPPINGS_DIR_ENV) or "").split(os.pathsep):
        if add is not None and folder.strip():
            add(folder)


def known(chunked: bool = False) -> list[str]:
    """The registered dataset names (only the chunked ones when ``chunked``)."""
    _with_mappings()
    return [s.name for s in DATASETS if s.chunked or not chunked]


def check_dataset(name: str, chunked: bool = False, typed: str | None = None) -> str:
    """``name`` when the registry has it; else :class:`argparse.ArgumentTypeError` naming what was
    ``typed`` (default: ``name``) and listing the valid names."""
    try:
        names = known(chunked)
    except ValueError as exc:  # a bad $CODEX_MAPPINGS_DIR mapping: say that, not "invalid value"
        raise argparse.ArgumentTypeError(str(exc)) from exc
    if name in names:
        return name
    shown = typed if typed is not None else name
    if name in known():
        raise argparse.ArgumentTypeError(
            f"dataset {shown!r} is not chunked (raw export only); chunked datasets: {', '.join(known(True))}")
    raise argparse.ArgumentTypeError(f"unknown dataset {shown!r}; datasets: {', '.join(known(chunked))}")


def dataset(name: str) -> str:
    """argparse ``type`` of ``--dataset NAME``: a registered dataset."""
    return check_dataset(name)


def chunked_dataset(name: str) -> str:
    """argparse ``type`` of ``--dataset NAME`` where only chunked datasets make sense."""
    return check_dataset(name, chunked=True)


def dataset_part(value: str) -> str:
    """argparse ``type`` of ``--dataset DS[=SUBDIR]``: ``DS`` must be a chunked dataset (``SUBDIR`` is kept)."""
    name, sep, sub = value.partition("=")
    return check_dataset(name.strip(), chunked=True, typed=value) + (sep + sub if sep else "")
