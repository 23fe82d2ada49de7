"""Reading landing files safely: every failure becomes a reject that names the file."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path

from codex_pipeline.core.documents import Reject

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


def landing_files(day_dir: Path) -> list[Path]:
    """Every non-folder entry under a landing day folder, in a stable order.

    Broken symlinks and special files are included on purpose: reading them fails
    and they become rejects instead of vanishing from the partition.
    """
    if not day_dir.is_dir():
        return []
    return sorted(p for p in day_dir.rglob("*") if not p.is_dir() and not p.name.startswith("."))


def read_text(path: Path, day_dir: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> str | Reject:
    """Decode a landing file as strict UTF-8 with newlines normalized to ``\\n``.

    The returned string is the file's canonical text: offsets in chunk anchors index
    into it. Anything that cannot be read exactly is returned as a :class:`Reject`.
    """
    rel = path.relative_to(day_dir).as_posix()
    try:
        if not path.is_file():
            return Reject(rel, "unreadable file: not a regular file (broken link, socket or device)")
        size = path.stat().st_size
        if size > max_bytes:
            return Reject(rel, f"file is {size} bytes, over the {max_bytes}-byte limit")
        data = path.read_bytes()
    except OSError as exc:
        return Reject(rel, f"unreadable file: {exc.strerror or exc}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 8]
        return Reject(
            rel,
            f"invalid UTF-8 at byte {exc.start}: {exc.reason} ({bad!r})",
            excerpt=data[max(0, exc.start - 40) : exc.start].decode("utf-8", "replace"),
        )
    return text.replace("\r\n", "\n").replace("\r", "\n")


def text_files(
    day_dir: Path, suffixes: Collection[str], wanted: str, rejects: list[Reject]
) -> Iterator[tuple[Path, str, str]]:
    """``(path, relative path, canonical text)`` of each readable file with one of ``suffixes``.

    Files of another type and files that cannot be read exactly are appended to
    ``rejects`` (``wanted`` names what the dataset takes, for the reason).
    """
    for path in landing_files(day_dir):
        rel = path.relative_to(day_dir).as_posix()
        suffix = path.suffix.lower()
        if suffix not in suffixes:
            rejects.append(Reject(rel, f"unsupported file type {suffix or '(none)'!r}: {wanted}"))
            continue
        text = read_text(path, day_dir)
        if isinstance(text, Reject):
            rejects.append(text)
            continue
        yield path, rel, text
