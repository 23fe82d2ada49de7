"""Every setting of a Codex deployment as one frozen value, parsed once at the edge.

:class:`CodexSettings` is built by the code location (``defs/``) and the CLI from the
process environment (:meth:`CodexSettings.from_env`) and handed down; nothing below the
edge reads the environment, and this package is the only place that knows the
variables' names and how they parse (``docs/configuration.md`` lists them).
"""

from codex_pipeline.settings.codex import CodexSettings, OpenAISettings, SettingsError
from codex_pipeline.settings.names import EnvName

__all__ = ["CodexSettings", "EnvName", "OpenAISettings", "SettingsError"]
