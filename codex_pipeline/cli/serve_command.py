"""``codex serve``: the HTTP search API and the evidence viewer (needs the ``[serve]`` extra).

Binds to 127.0.0.1 unless told otherwise: put a reverse proxy (TLS, access control) in front
before exposing it (docs/serve.md). The API key, when wanted, is read from the environment
variable ``--api-key-env`` names (default ``CODEX_SERVE_API_KEY``), never from the command line,
where other users of the machine could read it.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codex_pipeline.cli.arg_types import positive_int
from codex_pipeline.cli.errors import CliError
from codex_pipeline.cli.query_embedder import configured_embedder, query_embedder
from codex_pipeline.settings import CodexSettings, EnvName

if TYPE_CHECKING:
    from fastapi import FastAPI

    from codex_pipeline.serve.settings import ServeSettings

API_KEY_ENV = EnvName.SERVE_API_KEY
WORKER_ENV = EnvName.SERVE_WORKER_SETTINGS
"""The settings ``--workers`` processes build their app from (JSON; the API key stays in its own variable)."""


def add_serve_command(sub: Any) -> None:
    """Register ``codex serve`` on the CLI's subparsers."""
    s = sub.add_parser("serve", help="serve the search API (OpenAPI at /docs) and the evidence viewer (/view) over HTTP",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=positive_int, default=8080, help="port (default 8080)")
    s.add_argument("--api-key-env", default=API_KEY_ENV, metavar="VAR",
                   help=f"environment variable holding the API key clients must send as X-API-Key (default {API_KEY_ENV}; unset or empty: no key)")
    s.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                   help="a browser origin allowed to call the API (repeatable; default none)")
    s.add_argument("--max-k", type=positive_int, default=100, help="most hits one search may ask for (default 100)")
    s.add_argument("--max-query-chars", type=positive_int, default=1000, help="longest query accepted (default 1000)")
    s.add_argument("--max-body-bytes", type=positive_int, default=64 * 1024, help="largest request body (default 65536)")
    s.add_argument("--idle-timeout", type=positive_int, default=10, metavar="SECONDS",
                   help="close a connection that sends no whole request head within this many seconds of opening or "
                        "of its first byte, or stays idle this long between requests (default 10)")
    s.add_argument("--max-connections", type=positive_int, default=1000,
                   help="open connections at most: at the limit the longest-idle one is closed for a new one, and "
                        "when every one is busy a request is answered 503 (default 1000)")
    s.add_argument("--max-header-bytes", type=positive_int, default=16 * 1024,
                   help="largest request head (request line and headers); a larger one is answered 400 (default 16384)")
    s.add_argument("--refresh-seconds", type=float, default=5.0,
                   help="how often to look for new index versions (default 5; 0: on each query only)")
    s.add_argument("--rebuild", action="store_true",
                   help="rebuild stale indexes in a background thread (default: the pipeline builds them, the server follows)")
    s.add_argument("--embedder", default=None, help="local (default, $CODEX_EMBEDDER) or openai")
    s.add_argument("--workers", type=positive_int, default=1,
                   help="server processes sharing the port (default 1); a query is CPU-bound and holds one "
                        "process, so concurrent clients want about one per core; each loads the model and maps "
                        "the indexes (/metrics counts the process that answers)")
    s.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    """``codex serve``: serve until stopped, then exit 0; with ``--workers`` > 1 uvicorn starts each worker
    through :func:`worker_app`. Missing FastAPI, or ``--rebuild`` with ``--workers``, is a
    :class:`CliError`."""
    try:
        import uvicorn

        from codex_pipeline.serve.app import create_app
        from codex_pipeline.serve.connections import uvicorn_options
    except ImportError as exc:
        # the module's name only: the serve modules' own ImportError already says what this line says
        raise CliError(f"codex serve needs FastAPI and uvicorn (no module {exc.name or 'fastapi'!r}): "
                       "pip install 'codex-pipeline[serve]'") from None
    from codex_pipeline.warehouse.storage import Warehouse

    if args.workers > 1 and args.rebuild:
        raise CliError("--rebuild with --workers: every process would build; run one server with --rebuild, or "
                       "let the pipeline's [dataset, search_index] asset build and the workers follow")
    settings = {
        "data_dir": str(Warehouse(args.data_dir).root), "api_key_env": args.api_key_env,
        "cors_origins": list(args.cors_origin), "max_query_chars": args.max_query_chars, "max_k": args.max_k,
        "max_body_bytes": args.max_body_bytes, "refresh_seconds": args.refresh_seconds, "rebuild": args.rebuild,
        "embedder": configured_embedder(args.settings, args.embedder),
    }
    if args.host not in ("127.0.0.1", "localhost", "::1") and _api_key(settings) is None:
        print(f"codex serve: binding {args.host} without an API key (set ${args.api_key_env}); "
              "anyone who reaches the port can search")
    options: dict[str, Any] = {"host": args.host, "port": args.port, "log_level": "info", "proxy_headers": True,
                               "server_header": False,
                               **uvicorn_options(args.idle_timeout, args.max_connections, args.max_header_bytes)}
    if args.workers > 1:  # uvicorn starts each worker from an import string; they read the settings from the env
        os.environ[WORKER_ENV] = json.dumps(settings)
        uvicorn.run(f"{__name__}:worker_app", factory=True, workers=args.workers, **options)
    else:
        uvicorn.run(create_app(_config(settings, args.settings)), **options)
    return 0


def _config(settings: dict[str, Any], codex: CodexSettings) -> ServeSettings:
    from codex_pipeline.serve.settings import ServeSettings

    return ServeSettings(
        data_dir=Path(settings["data_dir"]), api_key=_api_key(settings),
        cors_origins=tuple(settings["cors_origins"]), max_query_chars=settings["max_query_chars"],
        max_k=settings["max_k"], max_body_bytes=settings["max_body_bytes"],
        refresh_interval_s=settings["refresh_seconds"], rebuild=settings["rebuild"],
        embedder=query_embedder(settings["embedder"], codex), embedder_kind=settings["embedder"],
    )


def _api_key(settings: dict[str, Any]) -> str | None:
    return (os.environ.get(settings["api_key_env"]) or "").strip() or None


def worker_app() -> FastAPI:
    """The app of one ``--workers`` process, from the settings the command put in its environment."""
    from codex_pipeline.serve.app import create_app

    return create_app(_config(json.loads(os.environ[WORKER_ENV]), CodexSettings.from_env(os.environ)))
