"""Dataset names from the command line, checked against the registry before any use.

A name typed after ``--dataset`` becomes a folder (``warehouse/<name>/…``, a lock file)
and a view name in SQL; only the registry's names are either, so a name like
``../../OTHER/narrative`` or ``x; DROP …`` is refused at parse time, before a file is
opened or a statement built. Every command that takes a dataset uses these as the
argparse ``type``.
"""

from __future__ import annotations

import argparse

from codex_pipeline.datasets.registry import DatasetRegistry
from codex_pipeline.settings import CodexSettings


class DatasetNames:
    """The registry of one command's settings, built on first use (a command that names no dataset never reads
    a mapping file), and the argparse ``type`` callables that check names against it."""

    def __init__(self, settings: CodexSettings) -> None:
        self._settings = settings
        self._registry: DatasetRegistry | None = None

    @property
    def registry(self) -> DatasetRegistry:
        """The settings' registry (raises what :meth:`DatasetRegistry.build` raises for a bad mapping)."""
        if self._registry is None:
            self._registry = DatasetRegistry.build(self._settings)
        return self._registry

    def check(self, name: str, chunked: bool = False, typed: str | None = None) -> str:
        """``name`` when the registry has it; else :class:`argparse.ArgumentTypeError` naming what was
        ``typed`` (default: ``name``) and listing the valid names."""
        try:
            names = self.registry.names(chunked)
        except ValueError as exc:  # a bad mapping in a mappings folder: say that, not "invalid value"
            raise argparse.ArgumentTypeError(str(exc)) from exc
        if name in names:
            return name
        shown = typed if typed is not None else name
        if name in self.registry.names():
            raise argparse.ArgumentTypeError(
                f"dataset {shown!r} is not chunked (raw export only); chunked datasets: {', '.join(self.registry.names(True))}")
        raise argparse.ArgumentTypeError(f"unknown dataset {shown!r}; datasets: {', '.join(names)}")

    def dataset(self, name: str) -> str:
        """argparse ``type`` of ``--dataset NAME``: a registered dataset."""
        return self.check(name)

    def chunked_dataset(self, name: str) -> str:
        """argparse ``type`` of ``--dataset NAME`` where only chunked datasets make sense."""
        return self.check(name, chunked=True)

    def dataset_part(self, value: str) -> str:
        """argparse ``type`` of ``--dataset DS[=SUBDIR]``: ``DS`` must be a chunked dataset (``SUBDIR`` is kept)."""
        name, sep, sub = value.partition("=")
        return self.check(name.strip(), chunked=True, typed=value) + (sep + sub if sep else "")
