"""How a deployment's steps use the machine: set once at the edge, carried by the :class:`Warehouse`.

The Dagster resource and the CLI read ``$CODEX_REDIRECT_THREADS`` and
``$CODEX_EMBED_CHECKPOINT_INPUTS`` / ``_SECONDS`` (:meth:`Tuning.from_env`, handed the
environment) and build the warehouse with the result; the steps take it from the
warehouse they are given, so no library code reads the process environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

REDIRECT_THREADS_ENV = "CODEX_REDIRECT_THREADS"
CHECKPOINT_INPUTS_ENV = "CODEX_EMBED_CHECKPOINT_INPUTS"
CHECKPOINT_SECONDS_ENV = "CODEX_EMBED_CHECKPOINT_SECONDS"
FOLLOW_LANDING_LINKS_ENV = "CODEX_FOLLOW_LANDING_LINKS"


@dataclass(frozen=True)
class CheckpointPolicy:
    """When buffered vectors are written: after ``every_inputs`` of them or ``every_seconds``
    since the last write, whichever comes first.

    Count alone is not enough: a slow model (a loaded CPU, a throttled API) could run
    for half an hour before 4,096 inputs are done, and a killed run would have saved
    nothing. Time is checked when a batch finishes, so a write lags by at most one batch.
    """

    every_inputs: int = 4096
    every_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.every_inputs < 1 or not self.every_seconds >= 0:
            raise ValueError(f"checkpoint every_inputs must be >= 1 and every_seconds >= 0, got {self}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CheckpointPolicy:
        """The defaults, overridden by ``CODEX_EMBED_CHECKPOINT_INPUTS`` / ``_SECONDS`` in ``environ``."""
        default = cls()
        inputs = _number(environ, CHECKPOINT_INPUTS_ENV, int, 1, "a whole number >= 1")
        seconds = _number(environ, CHECKPOINT_SECONDS_ENV, float, 0, "a number of seconds >= 0")
        return cls(
            every_inputs=default.every_inputs if inputs is None else int(inputs),
            every_seconds=default.every_seconds if seconds is None else float(seconds),
        )


@dataclass(frozen=True)
class Tuning:
    """``redirect_threads``: threads of the redirect step's word-set batches (None: the cores this
    process may run on, at most four; a site running one worker per core sets 1).
    ``checkpoint``: how often embedding progress is saved.
    ``follow_landing_links``: ingest a landing file that is a symlink to a file outside its landing
    day folder (off: such a link is a reject, so a landing folder cannot reach the rest of the disk)."""

    redirect_threads: int | None = None
    checkpoint: CheckpointPolicy = field(default_factory=CheckpointPolicy)
    follow_landing_links: bool = False

    def __post_init__(self) -> None:
        if self.redirect_threads is not None and self.redirect_threads < 1:
            raise ValueError(f"redirect_threads must be >= 1, got {self.redirect_threads}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Tuning:
        """The settings in ``environ`` (the edge passes ``os.environ``); a bad value raises a one-line error."""
        return cls(redirect_threads(environ), CheckpointPolicy.from_env(environ), follow_landing_links(environ))


def follow_landing_links(environ: Mapping[str, str]) -> bool:
    """``CODEX_FOLLOW_LANDING_LINKS`` in ``environ``: ``1``/``true``/``yes`` follow links, unset/``0``/``false``/``no`` do not."""
    value = environ.get(FOLLOW_LANDING_LINKS_ENV, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise ValueError(f"{FOLLOW_LANDING_LINKS_ENV}={value!r} is not a yes/no setting: set 1 to ingest symlinks "
                     "that lead outside a landing day folder, or unset it")


def redirect_threads(environ: Mapping[str, str]) -> int | None:
    """``CODEX_REDIRECT_THREADS`` in ``environ`` as a thread count, None when unset."""
    value = environ.get(REDIRECT_THREADS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{REDIRECT_THREADS_ENV}={value!r} is not a thread count: set a whole number of at least 1, "
                         "or unset it to use the cores this process may run on")
    return int(value)


def _number(env: Mapping[str, str], name: str, kind: type[int] | type[float], low: float, what: str) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        value = None
    if value is None or not value >= low:
        raise ValueError(f"{name}={raw!r} is not {what}")
    return value
