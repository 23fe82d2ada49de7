"""``codex serve``: the current corpus over HTTP (a JSON search API) and an evidence viewer in the browser.

Imports ``core``, ``warehouse``, ``retrieval`` and ``explore``; only ``cli`` imports it.
FastAPI and uvicorn come with the ``[serve]`` extra (:mod:`codex_pipeline.serve.app` says
so in one line when they are missing). :class:`ServeSettings` is everything the process
is told; :func:`~codex_pipeline.serve.app.create_app` builds the ASGI app from it.
"""

from __future__ import annotations

from codex_pipeline.serve.settings import ServeSettings

__all__ = ["ServeSettings"]
