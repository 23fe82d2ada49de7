"""The environment variables Codex reads: their names, in one place.

Only :meth:`codex_pipeline.settings.CodexSettings.from_env` reads them (and the CLI's
``serve`` command, for the key variable its user names); messages that tell a user
which variable to set take the name from here.
"""


class EnvName:
    """Names of the variables, grouped by what they set."""

    DATA_DIR = "CODEX_DATA_DIR"
    MAPPINGS_DIR = "CODEX_MAPPINGS_DIR"
    PARTITIONS_START = "CODEX_PARTITIONS_START"
    DAGSTER_HOME = "DAGSTER_HOME"
    # models
    EMBEDDER = "CODEX_EMBEDDER"
    EMBED_RUNTIME = "CODEX_EMBED_RUNTIME"
    EMBED_PRECISION = "CODEX_EMBED_PRECISION"
    EMBED_THREADS = "CODEX_EMBED_THREADS"
    EXTRACTOR = "CODEX_PROPOSITION_EXTRACTOR"
    OPENAI_API_KEY = "OPENAI_API_KEY"
    OPENAI_BASE_URL = "OPENAI_BASE_URL"
    # Dagster executor
    EXECUTOR = "CODEX_EXECUTOR"
    EXECUTOR_CONFIG = "CODEX_EXECUTOR_CONFIG"
    # how steps use the machine (warehouse StepSettings)
    REDIRECT_THREADS = "CODEX_REDIRECT_THREADS"
    CHECKPOINT_INPUTS = "CODEX_EMBED_CHECKPOINT_INPUTS"
    CHECKPOINT_SECONDS = "CODEX_EMBED_CHECKPOINT_SECONDS"
    FOLLOW_LANDING_LINKS = "CODEX_FOLLOW_LANDING_LINKS"
    BUILD_MEMORY_LIMIT = "CODEX_BUILD_MEMORY_LIMIT"
    # `codex serve`
    SERVE_API_KEY = "CODEX_SERVE_API_KEY"
    SERVE_WORKER_SETTINGS = "CODEX_SERVE_WORKER_SETTINGS"
