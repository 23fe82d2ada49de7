"""Codex: retrieval-ready chunk tables from public-data records.

The package root is the pure library (no Dagster import); ``codex_pipeline.defs``
is the Dagster code location that wires it.
"""

__version__ = "0.1.0"
