"""The ``codex`` command. It may import every layer; ``defs`` (Dagster) only where it
launches runs.
"""

from codex_pipeline.cli.app import main

__all__ = ["main"]
