"""Retracting documents: the ``_deleted.txt`` / ``_deleted.jsonl`` landing convention.

A landing day folder (``landing/<dataset>/<YYYY-MM-DD>/``) may hold, beside the day's
input files, either or both of:

``_deleted.txt``
    one record id per line. Blank lines and lines starting with ``#`` are skipped.
``_deleted.jsonl``
    one JSON object per line: ``{"record_id": "…"}`` (or ``{"doc_id": "urn:aprs:<dataset>:…"}``),
    with any other keys (e.g. ``"reason"``) kept out of the way.

A record id is what the dataset's reader names the record (the part after
``urn:aprs:<dataset>:`` in ``doc_id``: a file name for ``narrative``, a permit number
for ``permit_signals``); a full ``doc_id`` of the same dataset is accepted too. The
document is retracted from that day on: it leaves the current views, its chunk ids
get ``match = 'deleted'`` redirect rows, and landing it again on a later day brings it
back. Lines that cannot be read become rejects (stage ``tombstone``); so do, later,
tombstones naming a record that never landed before their day.

The files are never handed to the dataset's reader: :func:`without_tombstones` gives
the reader a view of the folder without them.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codex_pipeline.core.documents import Reject

__all__ = ["TOMBSTONE_FILES", "TOMBSTONE_STAGE", "Tombstone", "Tombstones", "read_tombstones", "without_tombstones"]

TOMBSTONE_FILES = ("_deleted.txt", "_deleted.jsonl")
TOMBSTONE_STAGE = "tombstone"
MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Tombstone:
    """One accepted line: retract the record from this landing day on."""

    record_id: str
    source_file: str
    line: int


@dataclass
class Tombstones:
    """The tombstones of a landing day that were accepted, and the rejects of those that were not."""

    tombstones: list[Tombstone] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)

    def split_landed(self, landed_record_ids: set[str]) -> Tombstones:
        """Reject tombstones of records that also land this very day (which one wins would be a guess)."""
        kept, rejects = [], list(self.rejects)
        for t in self.tombstones:
            if t.record_id in landed_record_ids:
                rejects.append(_reject(t.source_file, t.line,
                                       f"record {t.record_id!r} also lands in this folder: a day cannot both land and "
                                       "retract a record (drop the line, or land the record on a later day)"))
            else:
                kept.append(t)
        return Tombstones(kept, rejects)


def tombstone_files(day_dir: Path) -> list[Path]:
    return [day_dir / name for name in TOMBSTONE_FILES if (day_dir / name).exists() or (day_dir / name).is_symlink()]


def read_tombstones(day_dir: Path, dataset: str) -> Tombstones:
    """The tombstones of a landing day folder; every unreadable line is a reject naming it."""
    out = Tombstones()
    seen: set[str] = set()
    for path in tombstone_files(day_dir):
        text = _read(path, out.rejects)
        if text is None:
            continue
        parse = _parse_json_line if path.suffix == ".jsonl" else _parse_text_line
        for n, raw in enumerate(text.split("\n"), 1):
            line = raw.strip()
            if not line or (path.suffix == ".txt" and line.startswith("#")):
                continue
            got = parse(line, dataset)
            if isinstance(got, _Bad):
                out.rejects.append(_reject(path.name, n, got.reason, excerpt=line[:200]))
                continue
            if got not in seen:  # the same record twice: one retraction
                seen.add(got)
                out.tombstones.append(Tombstone(got, path.name, n))
    return out


def _read(path: Path, rejects: list[Reject]) -> str | None:
    try:
        if not path.is_file():
            rejects.append(Reject(path.name, "unreadable tombstone file: not a regular file", stage=TOMBSTONE_STAGE))
            return None
        if path.stat().st_size > MAX_BYTES:
            rejects.append(Reject(path.name, f"tombstone file over {MAX_BYTES} bytes", stage=TOMBSTONE_STAGE))
            return None
        data = path.read_bytes()
    except OSError as exc:
        rejects.append(Reject(path.name, f"unreadable tombstone file: {exc.strerror or exc}", stage=TOMBSTONE_STAGE))
        return None
    try:
        return data.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as exc:
        rejects.append(Reject(path.name, f"invalid UTF-8 at byte {exc.start}: {exc.reason}; no line of it was applied",
                              stage=TOMBSTONE_STAGE))
        return None


@dataclass(frozen=True)
class _Bad:
    """Why a line is not a tombstone."""

    reason: str


def _record_id(value: str, dataset: str) -> str | _Bad:
    """The record id a line names (a ``doc_id`` of this dataset stripped to it)."""
    if value.startswith("urn:aprs:"):
        prefix = f"urn:aprs:{dataset}:"
        if not value.startswith(prefix):
            return _Bad(f"{value!r} is a document of another dataset (expected {prefix}…)")
        value = value[len(prefix):]
    if not value.strip():
        return _Bad("empty record id")
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        return _Bad(f"record id {value!r} contains a control character")
    return value


def _parse_text_line(line: str, dataset: str) -> str | _Bad:
    return _record_id(line, dataset)


def _parse_json_line(line: str, dataset: str) -> str | _Bad:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        return _Bad(f"not JSON: {exc.msg} at column {exc.colno}")
    if not isinstance(obj, dict):
        return _Bad(f"expected a JSON object with a record_id, got {type(obj).__name__}")
    value = obj.get("record_id", obj.get("doc_id"))
    if not isinstance(value, str):
        return _Bad("no string field record_id (or doc_id)")
    return _record_id(value, dataset)


def _reject(source_file: str, line: int, reason: str, excerpt: str | None = None) -> Reject:
    return Reject(source_file, reason, f"line {line}", excerpt, stage=TOMBSTONE_STAGE)


@contextlib.contextmanager
def without_tombstones(day_dir: Path) -> Iterator[Path]:
    """The landing folder as the dataset's reader must see it: without the tombstone files.

    When the folder has none (the usual day), that is the folder itself. Otherwise a
    temporary mirror of it: the same tree, every other file a symlink to the real one,
    so readers name files by the same relative paths.
    """
    skip = set(tombstone_files(day_dir)) if day_dir.is_dir() else set()
    if not skip:
        yield day_dir
        return
    with tempfile.TemporaryDirectory(prefix="codex-landing-") as tmp:
        mirror = Path(tmp) / day_dir.name
        mirror.mkdir()
        for src in sorted(day_dir.rglob("*")):
            if src in skip:
                continue
            dst = mirror / src.relative_to(day_dir)
            if src.is_dir() and not src.is_symlink():
                dst.mkdir(parents=True, exist_ok=True)
            else:
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.path.abspath(src), dst)
        yield mirror
