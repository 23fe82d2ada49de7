"""The Codex code location: thin Dagster wiring around the pure library.

The only layer that imports Dagster; it may import every other layer but ``cli``.
``defs`` is :func:`~codex_pipeline.defs.definitions.build_definitions` of the process
environment's settings, made when first asked for (by Dagster's loader, which lists this
module's names), so importing a module of this package reads nothing.
"""

import functools
import os

import dagster as dg


@functools.cache
def _code_location() -> dg.Definitions:
    from codex_pipeline.defs.definitions import build_definitions
    from codex_pipeline.settings import CodexSettings

    return build_definitions(CodexSettings.from_env(os.environ))


def __getattr__(name: str) -> dg.Definitions:
    if name == "defs":
        return _code_location()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return ["defs"]
