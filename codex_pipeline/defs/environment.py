"""The environment variables the code location's resources and partitions read, read here.

The library takes these values as arguments and settings: the resources in
:mod:`.resources` build warehouses, embedders and extractors from them. (The executor's
two variables are read in :mod:`.executors`, the CLI's in ``cli/``.)
``docs/configuration.md`` lists each variable; a test keeps the two in step.
"""

import datetime as dt
import os
from pathlib import Path

from codex_pipeline.datasets.days import partitions_start
from codex_pipeline.datasets.registry import DATASETS
from codex_pipeline.embeddings.runtimes import LocalModelOptions
from codex_pipeline.warehouse.tuning import Tuning

DATA_DIR_ENV = "CODEX_DATA_DIR"
EMBEDDER_ENV = "CODEX_EMBEDDER"
EXTRACTOR_ENV = "CODEX_PROPOSITION_EXTRACTOR"
API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
MAPPINGS_DIR_ENV = "CODEX_MAPPINGS_DIR"


def data_dir() -> str | None:
    """``$CODEX_DATA_DIR``; None leaves the default, ``data/`` in the checkout."""
    return os.environ.get(DATA_DIR_ENV) or None


def tuning() -> Tuning:
    """``$CODEX_REDIRECT_THREADS`` and ``$CODEX_EMBED_CHECKPOINT_INPUTS`` / ``_SECONDS``."""
    return Tuning.from_env(os.environ)


def first_partition() -> dt.date:
    """``$CODEX_PARTITIONS_START`` (default 2026-11-01)."""
    return partitions_start(os.environ)


def configured_kind() -> str:
    """The embedder kind: ``$CODEX_EMBEDDER``, default ``local``."""
    return (os.environ.get(EMBEDDER_ENV) or "local").strip().lower()


def local_model_options() -> LocalModelOptions:
    """``$CODEX_EMBED_RUNTIME`` / ``_PRECISION`` / ``_THREADS`` (the `embedding` resource's local_* fields)."""
    return LocalModelOptions.from_env(os.environ)


def configured_extractor_kind() -> str:
    """The proposition extractor: ``$CODEX_PROPOSITION_EXTRACTOR``, default ``offline``."""
    return (os.environ.get(EXTRACTOR_ENV) or "offline").strip().lower()


def openai_api_key() -> str:
    """``$OPENAI_API_KEY`` (never from run config, so it never shows in the UI or in run metadata)."""
    return os.environ.get(API_KEY_ENV, "").strip()


def openai_base_url() -> str | None:
    """``$OPENAI_BASE_URL``; None is the OpenAI API."""
    return os.environ.get(BASE_URL_ENV) or None


def mappings_dirs() -> list[Path]:
    """``$CODEX_MAPPINGS_DIR``: folders (``os.pathsep``-separated) whose mapping files each add a dataset."""
    return [Path(p) for p in (os.environ.get(MAPPINGS_DIR_ENV) or "").split(os.pathsep) if p.strip()]


# every asset factory iterates the registry when defs/assets.py is imported, after this module
for _folder in mappings_dirs():
    DATASETS.add_mapping_folder(_folder)
