"""What a ``codex serve`` process is told: where the data is, who may call it, how much a request may ask."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_QUERY_CHARS = 1000
MAX_K = 100
MAX_BODY_BYTES = 64 * 1024
REFRESH_INTERVAL_S = 5.0
API_KEY_COOKIE = "codex_api_key"  # the viewer's key: set HttpOnly by POST /view/login


@dataclass(frozen=True)
class ServeSettings:
    """Settings of one server process (the CLI reads the environment and flags; nothing here does).

    ``api_key``: when set, every endpoint but ``/health`` and ``/ready`` wants it in the
    ``X-API-Key`` header (or the viewer's cookie). ``cors_origins``: browser origins allowed
    to call the API from other pages (none by default). ``rebuild``: a background thread
    rebuilds stale indexes every ``refresh_interval_s`` (off: the pipeline's
    ``[dataset, search_index]`` asset builds them and the server only follows new versions).
    ``embedder``: an embedder object (tests inject the fake); else one of ``embedder_kind``.
    """

    data_dir: Path
    api_key: str | None = None
    cors_origins: tuple[str, ...] = ()
    max_query_chars: int = MAX_QUERY_CHARS
    max_k: int = MAX_K
    max_body_bytes: int = MAX_BODY_BYTES
    refresh_interval_s: float = REFRESH_INTERVAL_S
    rebuild: bool = False
    embedder: Any = None
    embedder_kind: str = "local"
    datasets: tuple[str, ...] = field(default_factory=tuple)
