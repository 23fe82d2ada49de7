"""The deployment's settings value and how the environment is parsed into it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from codex_pipeline.embeddings.runtimes import PRECISIONS, RUNTIMES, LocalModelSettings
from codex_pipeline.settings.names import EnvName
from codex_pipeline.warehouse.step_settings import SIZE, CheckpointSettings, StepSettings

EMBEDDERS = ("local", "openai")
EXTRACTORS = ("offline", "openai")
EXECUTORS = ("default", "in_process", "multiprocess", "celery", "k8s", "celery_k8s")
DEFAULT_PARTITIONS_START = dt.date(2026, 11, 1)
_T = TypeVar("_T")
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_iso_day(text: str) -> dt.date | None:
    """``YYYY-MM-DD`` as a date, or None (``fromisoformat`` alone would also take ``20261101``)."""
    text = text.strip()
    if not _ISO_DAY.fullmatch(text):
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


class SettingsError(ValueError):
    """A variable whose value cannot be used; the message is one line naming it and the fix."""


@dataclass(frozen=True)
class OpenAISettings:
    """How an OpenAI-compatible server is reached. The key is kept out of ``repr`` (it ends up in logs)."""

    api_key: str = field(default="", repr=False)
    base_url: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> OpenAISettings:
        """``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` of ``environ``: read where a request is made (a worker's
        own environment), so the key never travels in run config."""
        text = _Reader(environ)
        return cls(api_key=text.get(EnvName.OPENAI_API_KEY), base_url=text.get(EnvName.OPENAI_BASE_URL) or None)


@dataclass(frozen=True)
class CodexSettings:
    """Everything a code location or a command needs to know about its deployment.

    ``data_dir`` None is ``data/`` in the checkout; ``mapping_folders`` each add one
    dataset per mapping file; ``partitions_start`` is the first daily partition;
    ``embedder`` / ``local_model`` / ``extractor`` / ``openai`` choose and reach the
    models; ``executor`` / ``executor_config`` the Dagster executor; ``steps`` how
    steps use the machine; ``dagster_home`` the instance the CLI runs on (None:
    an ephemeral one).
    """

    data_dir: Path | None = None
    mapping_folders: tuple[Path, ...] = ()
    partitions_start: dt.date = DEFAULT_PARTITIONS_START
    embedder: str = "local"
    local_model: LocalModelSettings = field(default_factory=LocalModelSettings)
    extractor: str = "offline"
    openai: OpenAISettings = field(default_factory=OpenAISettings)
    executor: str = "default"
    executor_config: Path | None = None
    steps: StepSettings = field(default_factory=StepSettings)
    dagster_home: Path | None = None

    def __post_init__(self) -> None:
        _one_of(self.embedder, EMBEDDERS, EnvName.EMBEDDER)
        _one_of(self.extractor, EXTRACTORS, EnvName.EXTRACTOR)
        _one_of(self.executor, EXECUTORS, EnvName.EXECUTOR)

    def replace(self, **changes: object) -> CodexSettings:
        """A copy with ``changes`` (the CLI's flags over the environment's values)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CodexSettings:
        """The settings ``environ`` describes (the edge passes ``os.environ``); unset variables keep the defaults.

        Raises :class:`SettingsError` naming the first variable whose value is not usable.
        """
        text = _Reader(environ)
        return cls(
            data_dir=text.path(EnvName.DATA_DIR),
            mapping_folders=tuple(Path(p.strip()) for p in text.get(EnvName.MAPPINGS_DIR).split(os.pathsep) if p.strip()),
            partitions_start=text.parsed(EnvName.PARTITIONS_START, parse_iso_day, "a date (expected YYYY-MM-DD)")
            or DEFAULT_PARTITIONS_START,
            embedder=text.word(EnvName.EMBEDDER) or "local",
            local_model=LocalModelSettings(
                runtime=text.choice(EnvName.EMBED_RUNTIME, RUNTIMES) or "auto",
                precision=text.choice(EnvName.EMBED_PRECISION, PRECISIONS) or "auto",
                threads=text.count(EnvName.EMBED_THREADS),
            ),
            extractor=text.word(EnvName.EXTRACTOR) or "offline",
            openai=OpenAISettings.from_env(environ),
            executor=(text.word(EnvName.EXECUTOR) or "default").replace("-", "_"),
            executor_config=text.path(EnvName.EXECUTOR_CONFIG),
            steps=StepSettings(
                redirect_threads=text.count(EnvName.REDIRECT_THREADS),
                checkpoint=_checkpoint(text),
                follow_landing_links=text.flag(EnvName.FOLLOW_LANDING_LINKS),
                build_memory_limit=text.size(EnvName.BUILD_MEMORY_LIMIT),
            ),
            dagster_home=text.path(EnvName.DAGSTER_HOME),
        )


def _checkpoint(text: _Reader) -> CheckpointSettings:
    default = CheckpointSettings()
    inputs = text.number(EnvName.CHECKPOINT_INPUTS, int, 1, "a whole number >= 1")
    seconds = text.number(EnvName.CHECKPOINT_SECONDS, float, 0, "a number of seconds >= 0")
    return CheckpointSettings(
        every_inputs=default.every_inputs if inputs is None else int(inputs),
        every_seconds=default.every_seconds if seconds is None else float(seconds),
    )


def _one_of(value: str, allowed: tuple[str, ...], name: str) -> None:
    if value not in allowed:
        raise SettingsError(f"{name}={value!r} is not one of {', '.join(allowed)}: set one of them, or unset it")


@dataclass(frozen=True)
class _Reader:
    """Typed reads of one environment mapping; every failure names its variable."""

    environ: Mapping[str, str]

    def get(self, name: str) -> str:
        return (self.environ.get(name) or "").strip()

    def word(self, name: str) -> str:
        return self.get(name).lower()

    def path(self, name: str) -> Path | None:
        return Path(self.get(name)) if self.get(name) else None

    def choice(self, name: str, allowed: tuple[str, ...]) -> str | None:
        value = self.word(name)
        if value:
            _one_of(value, allowed, name)
        return value or None

    def parsed(self, name: str, parse: Callable[[str], _T | None], what: str) -> _T | None:
        raw = self.get(name)
        if not raw:
            return None
        value = parse(raw)
        if value is None:
            raise SettingsError(f"{name}={raw!r} is not {what}")
        return value

    def count(self, name: str) -> int | None:
        """A thread count (a whole number >= 1), None when unset."""
        raw = self.get(name)
        if raw and (not raw.isdigit() or int(raw) < 1):
            raise SettingsError(f"{name}={raw!r} is not a thread count: set a whole number of at least 1, "
                                "or unset it to use the cores this process may run on")
        return int(raw) if raw else None

    def number(self, name: str, kind: type[int] | type[float], low: float, what: str) -> float | None:
        raw = self.get(name)
        if not raw:
            return None
        try:
            value: float | None = kind(raw)
        except ValueError:
            value = None
        if value is None or not value >= low:
            raise SettingsError(f"{name}={raw!r} is not {what}")
        return value

    def size(self, name: str) -> str | None:
        value = self.get(name)
        if value and not SIZE.match(value):
            raise SettingsError(f"{name}={value!r} is not a size: set a number and a unit such as 1GB or 512MiB, or unset it")
        return value or None

    def flag(self, name: str) -> bool:
        value = self.word(name)
        if value in ("", "0", "false", "no"):
            return False
        if value in ("1", "true", "yes"):
            return True
        raise SettingsError(f"{name}={value!r} is not a yes/no setting: set 1 or 0, or unset it")
