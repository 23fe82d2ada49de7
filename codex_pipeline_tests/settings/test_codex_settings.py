"""The environment parsed once into a settings value: every variable, its default, and one-line errors naming it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from pathlib import Path

import pytest

from codex_pipeline.embeddings.runtimes import LocalModelSettings
from codex_pipeline.settings import CodexSettings, EnvName, OpenAISettings, SettingsError
from codex_pipeline.warehouse.step_settings import CheckpointSettings, StepSettings


def test_an_empty_environment_is_the_defaults() -> None:
    assert CodexSettings.from_env({}) == CodexSettings()
    s = CodexSettings()
    assert (s.data_dir, s.mapping_folders, s.partitions_start) == (None, (), dt.date(2026, 11, 1))
    assert (s.embedder, s.extractor, s.executor) == ("local", "offline", "default")
    assert s.steps == StepSettings() and s.local_model == LocalModelSettings() and s.openai == OpenAISettings()


def test_every_variable_sets_its_field() -> None:
    env = {
        EnvName.DATA_DIR: "/srv/codex", EnvName.MAPPINGS_DIR: f"/a{os.pathsep}{os.pathsep} /b ",
        EnvName.PARTITIONS_START: "2025-06-15", EnvName.EMBEDDER: " OpenAI ", EnvName.EMBED_RUNTIME: "OpenVINO",
        EnvName.EMBED_PRECISION: " fp32 ", EnvName.EMBED_THREADS: "3", EnvName.EXTRACTOR: "openai",
        EnvName.OPENAI_API_KEY: " sk-test ", EnvName.OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
        EnvName.EXECUTOR: "in-process", EnvName.EXECUTOR_CONFIG: "deploy/celery.yaml",
        EnvName.REDIRECT_THREADS: "2", EnvName.CHECKPOINT_INPUTS: "64", EnvName.CHECKPOINT_SECONDS: "0.5",
        EnvName.FOLLOW_LANDING_LINKS: "yes", EnvName.DAGSTER_HOME: "/srv/dagster",
    }
    s = CodexSettings.from_env(env)
    assert s.data_dir == Path("/srv/codex") and s.mapping_folders == (Path("/a"), Path("/b"))
    assert s.partitions_start == dt.date(2025, 6, 15) and s.dagster_home == Path("/srv/dagster")
    assert (s.embedder, s.extractor, s.executor) == ("openai", "openai", "in_process")
    assert s.local_model == LocalModelSettings("openvino", "fp32", 3)
    assert s.openai == OpenAISettings("sk-test", "http://127.0.0.1:9/v1")
    assert s.executor_config == Path("deploy/celery.yaml")
    assert s.steps == StepSettings(2, CheckpointSettings(64, 0.5), True)


def test_the_key_stays_out_of_repr() -> None:
    s = CodexSettings.from_env({EnvName.OPENAI_API_KEY: "sk-secret"})
    assert "sk-secret" not in repr(s) and s.openai.api_key == "sk-secret"


@pytest.mark.parametrize(("name", "bad", "what"), [
    (EnvName.PARTITIONS_START, "2025/06/15", "is not a date (expected YYYY-MM-DD)"),
    (EnvName.EMBEDDER, "bogus", "is not one of local, openai"),
    (EnvName.EXTRACTOR, "llm", "is not one of offline, openai"),
    (EnvName.EXECUTOR, "ray", "is not one of default, in_process"),
    (EnvName.EMBED_RUNTIME, "onnx", "is not one of auto, openvino, torch"),
    (EnvName.EMBED_PRECISION, "fp16", "is not one of auto, fp32, bf16"),
    (EnvName.EMBED_THREADS, "0", "is not a thread count"),
    (EnvName.EMBED_THREADS, "two", "is not a thread count"),
    (EnvName.REDIRECT_THREADS, "-1", "is not a thread count"),
    (EnvName.CHECKPOINT_INPUTS, "1.5", "is not a whole number >= 1"),
    (EnvName.CHECKPOINT_INPUTS, "0", "is not a whole number >= 1"),
    (EnvName.CHECKPOINT_SECONDS, "soon", "is not a number of seconds >= 0"),
    (EnvName.CHECKPOINT_SECONDS, "-1", "is not a number of seconds >= 0"),
    (EnvName.FOLLOW_LANDING_LINKS, "maybe", "is not a yes/no setting"),
])
def test_a_bad_value_is_one_line_naming_the_variable(name: str, bad: str, what: str) -> None:
    with pytest.raises(SettingsError) as info:
        CodexSettings.from_env({name: bad})
    message = str(info.value)
    assert message.startswith(f"{name}={bad.strip().lower() if name != EnvName.PARTITIONS_START else bad!r}"[:len(name) + 1])
    assert what in message and "\n" not in message


def test_a_value_is_frozen_and_replaced_not_changed() -> None:
    s = CodexSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.data_dir = Path("x")  # type: ignore[misc]
    assert s.replace(data_dir=Path("x")).data_dir == Path("x") and s.data_dir is None


def test_an_unset_or_empty_variable_keeps_the_default() -> None:
    empty = {name: " " for name in vars(EnvName).values() if isinstance(name, str) and name.isupper()}
    assert CodexSettings.from_env(empty) == CodexSettings()
