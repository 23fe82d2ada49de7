"""Reading landing files safely: every failure becomes a reject that names the file.

A landing folder is trusted to hold the files a user meant to land, not to be free of
tricks: a symlink whose target leaves the landing day folder (``/etc/passwd``,
``../../other``), a link to a folder, a hidden file, or a name holding a control
character is never read. :func:`screen_landing` turns each into a named reject, and
:func:`landing_files`, what every reader walks, leaves them out, so every entry of a
folder ends in ``raw`` or in the rejects. A link to a file inside the folder is read;
one that leaves it is read only under :func:`landing_scope` with ``follow_links`` (the
deployment's ``CODEX_FOLLOW_LANDING_LINKS``). The same holds one level up and sideways:
a day folder that is itself a symlink (:func:`day_folder_link`) and a hard link whose
other names live outside the day folder are links leaving it.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
from collections import Counter
from collections.abc import Collection, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from codex_pipeline.core.documents import Reject

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 control characters and DEL (they break logs, ids and the chunk contract), and bidi embeddings,
overrides and isolates (``invoice<U+202E>fdp.exe`` shows as ``invoiceexe.pdf`` wherever the name is printed)."""
FOLLOW_SETTING = "CODEX_FOLLOW_LANDING_LINKS=1"


@dataclass(frozen=True)
class LandingScope:
    """The real landing day folder links may lead into, and whether links leaving it are followed."""

    root: Path
    follow_links: bool = False

    @cached_property
    def names_inside(self) -> Counter[tuple[int, int]]:
        """How many names each file (device, inode) has inside ``root``: a hard link's other names may be elsewhere."""
        counts: Counter[tuple[int, int]] = Counter()
        for top, _dirs, files in os.walk(self.root, followlinks=False):
            for name in files:
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(top, name))
                    counts[(st.st_dev, st.st_ino)] += 1
        return counts


_SCOPE: ContextVar[LandingScope | None] = ContextVar("landing_scope", default=None)


@contextlib.contextmanager
def landing_scope(root: Path, follow_links: bool = False) -> Iterator[LandingScope]:
    """Readers called inside see ``root`` as the landing day folder, whatever folder they are handed.

    The raw step reads through a mirror of links when a day holds tombstone files
    (:func:`~codex_pipeline.sources.tombstones.without_tombstones`): its links lead into
    ``root``, and only there.
    """
    scope = LandingScope(Path(os.path.realpath(root)), follow_links)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def _scope(day_dir: Path) -> LandingScope:
    """The scope readers are in, or the day folder itself when none was set."""
    return _SCOPE.get() or LandingScope(Path(os.path.realpath(day_dir)))


def day_folder_link(day_dir: Path, follow_links: bool = False) -> str | None:
    """Why the day folder is not read at all (it is itself a symlink), or None when it may be.

    ``landing/<dataset>/<day> -> anywhere`` would make every file of ``anywhere`` land; like a
    file link leaving its folder, it is followed only with ``follow_links``.
    """
    if follow_links or not day_dir.is_symlink():
        return None
    return (f"the day folder {day_dir} is a symlink to {os.path.realpath(day_dir)}: nothing in it was read; "
            f"make the day a real folder and copy the files in, or set {FOLLOW_SETTING} to follow such links")


def landing_entries(day_dir: Path) -> list[Path]:
    """Every entry under a landing day folder that is not a real folder, in a stable order.

    Links are listed, never descended into (a directory link is an entry); broken links,
    fifos, sockets and devices are listed too, so reading them fails into a reject. A day
    folder that is a link not to be followed (:func:`day_folder_link`) has no entries.
    """
    if not day_dir.is_dir() or day_folder_link(day_dir, _scope(day_dir).follow_links):
        return []
    out: list[Path] = []
    for top, dirs, files in os.walk(day_dir, followlinks=False):
        here = Path(top)
        out += [here / name for name in files]
        out += [here / name for name in dirs if (here / name).is_symlink()]
    return sorted(out)


def unusable(path: Path, day_dir: Path, scope: LandingScope | None = None) -> str | None:
    """Why the landing entry ``path`` is never read (a reject's reason), or None when it may be.

    ``scope``: the landing scope to judge links by (default: the current one, see :func:`landing_scope`).
    """
    for part in path.relative_to(day_dir).parts:
        if part.startswith("."):
            return (f"hidden file or folder {part!r} (its name starts with '.'): never read; "
                    "rename it without the leading dot to land it")
        bad = CONTROL_CHARACTER.search(part)
        if bad:
            return (f"file name {part!r} holds the control character U+{ord(bad.group()):04X}: "
                    "rename the file without it to land it")
    scope = scope or _scope(day_dir)
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if target.is_dir():
            return f"link to the folder {target}: folder links are never followed; copy the files into the landing folder"
        if not target.is_relative_to(scope.root) and not scope.follow_links:
            return (f"symlink to {target}, outside the landing day folder: not read; copy the file in, "
                    f"or set {FOLLOW_SETTING} to follow such links")
    return None if scope.follow_links else _hard_link_outside(path, scope)


def _hard_link_outside(path: Path, scope: LandingScope) -> str | None:
    """Why a hard-linked file is not read: some of its names are outside the landing day folder."""
    try:
        st = path.stat()
    except OSError:
        return None  # a broken link or a vanished file: reading it fails into a reject
    if st.st_nlink < 2 or not path.is_file():
        return None
    inside = scope.names_inside[(st.st_dev, st.st_ino)]
    if inside >= st.st_nlink:
        return None
    return (f"hard link: the file has {st.st_nlink} names, {st.st_nlink - inside} of them outside the landing day "
            f"folder: not read; copy the file in (cp, not ln), or set {FOLLOW_SETTING} to follow such links")


def screen_landing(day_dir: Path) -> list[Reject]:
    """A reject for each entry of ``day_dir`` that :func:`landing_files` leaves out (see :func:`unusable`)."""
    scope = _scope(day_dir)
    whole_day = day_folder_link(day_dir, scope.follow_links)
    if whole_day is not None:
        return [Reject(".", whole_day)]
    rejects = []
    for path in landing_entries(day_dir):
        reason = unusable(path, day_dir, scope)
        if reason is not None:
            rejects.append(Reject(path.relative_to(day_dir).as_posix(), reason))
    return rejects


def landing_files(day_dir: Path) -> list[Path]:
    """Every landing entry a reader may read, in a stable order (:func:`screen_landing` rejects the rest).

    Broken symlinks and special files are included on purpose: reading them fails
    and they become rejects instead of vanishing from the partition.
    """
    scope = _scope(day_dir)
    return [p for p in landing_entries(day_dir) if unusable(p, day_dir, scope) is None]


def read_text(path: Path, day_dir: Path, max_bytes: int = DEFAULT_MAX_BYTES, *, html: bool | None = False) -> str | Reject:
    """Decode a landing file as strict UTF-8 with newlines normalized to ``\\n``.

    The returned string is the file's canonical text: offsets in chunk anchors index
    into it. Anything that cannot be read exactly is returned as a :class:`Reject`.
    ``html`` (None: when the bytes open like an HTML page): a file that is not UTF-8 is
    read in the charset its ``<meta>`` declares (:func:`read_text_encoded`).
    """
    got = read_text_encoded(path, day_dir, max_bytes, html=html)
    return got if isinstance(got, Reject) else got[0]


def read_text_encoded(path: Path, day_dir: Path, max_bytes: int = DEFAULT_MAX_BYTES, *, html: bool | None = False
                      ) -> tuple[str, str] | Reject:
    """:func:`read_text` and the codec it decoded with (``utf-8`` unless an HTML page declared another).

    Older pages and exports are often ISO-8859-1 or windows-1252 and say so in their head; browsers
    read them by that declaration (the WHATWG Encoding Standard: ISO-8859-1 and ASCII labels mean
    windows-1252), so a user expects them read, not rejected. Plain text and Markdown declare
    nothing and stay strict UTF-8: undeclared bytes are never guessed.
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
    codec = "utf-8"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if html is None:
            html = HTML_START.match(data[:4096].decode("latin-1")) is not None
        declared = _declared_charset(data[:4096]) if html else None
        if declared is None:
            bad = data[exc.start : exc.start + 8]
            return Reject(
                rel,
                f"invalid UTF-8 at byte {exc.start}: {exc.reason} ({bad!r}); re-save the file as UTF-8",
                excerpt=data[max(0, exc.start - 40) : exc.start].decode("utf-8", "replace"),
            )
        try:
            codec = codecs.lookup(declared).name
        except LookupError:
            return Reject(rel, f"HTML declares charset {declared!r}, which Python does not know; re-save the file as UTF-8")
        codec = "cp1252" if codec in _WINDOWS_1252 else codec
        try:
            text = data.decode(codec)
        except UnicodeDecodeError as err:
            return Reject(rel, f"HTML declares charset {codec} but byte {err.start} is not {codec}; "
                               "re-save the file as UTF-8")
    if "\x00" in text:  # valid UTF-8, but no text file holds NULs: UTF-16/32 without a byte-order mark
        return Reject(rel, f"the file holds NUL bytes ({text.count(chr(0))} of {len(data)}): {_nul_encoding(data)}; "
                           "re-save it as UTF-8 (a byte-order mark alone also works)")
    return text.replace("\r\n", "\n").replace("\r", "\n"), codec


HTML_START = re.compile(r"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)[\s>]", re.I | re.S)
"""How an HTML page opens, whatever its file name."""
_META_CHARSET = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_WINDOWS_1252 = {"latin_1", "iso8859-1", "ascii"}  # labels the WHATWG Encoding Standard reads as windows-1252


def _declared_charset(head: bytes) -> str | None:
    found = _META_CHARSET.search(head)
    return found.group(1).decode("ascii") if found else None


def _nul_encoding(data: bytes) -> str:
    """The likely encoding of bytes full of NULs, from where the NULs fall (ASCII text: 1 byte of 2 or 4 is set)."""
    head = data[:4096]
    at = [sum(1 for i in range(k, len(head), 4) if head[i] == 0) for k in range(4)]
    quarter = max(len(head) // 4, 1)
    if min(at[1:]) >= 0.9 * quarter and at[0] < 0.5 * quarter:
        return "most likely UTF-32-LE text without a byte-order mark"
    if min(at[:3]) >= 0.9 * quarter and at[3] < 0.5 * quarter:
        return "most likely UTF-32-BE text without a byte-order mark"
    odd, even = at[1] + at[3], at[0] + at[2]
    if odd >= 1.6 * quarter and even < 0.5 * odd:
        return "most likely UTF-16-LE text without a byte-order mark"
    if even >= 1.6 * quarter and odd < 0.5 * even:
        return "most likely UTF-16-BE text without a byte-order mark"
    return "a binary file, or UTF-16/UTF-32 text without a byte-order mark"


def text_files(
    day_dir: Path, suffixes: Collection[str], wanted: str, rejects: list[Reject], html_suffixes: Collection[str] = ()
) -> Iterator[tuple[Path, str, str]]:
    """``(path, relative path, canonical text)`` of each readable file with one of ``suffixes``.

    Files of another type and files that cannot be read exactly are appended to
    ``rejects`` (``wanted`` names what the dataset takes, for the reason). A file with one of
    ``html_suffixes`` that is not UTF-8 is read in the charset it declares (:func:`read_text_encoded`).
    """
    for path in landing_files(day_dir):
        rel = path.relative_to(day_dir).as_posix()
        suffix = path.suffix.lower()
        if suffix not in suffixes:
            rejects.append(Reject(rel, f"unsupported file type {suffix or '(none)'!r}: {wanted}"))
            continue
        text = read_text(path, day_dir, html=suffix in html_suffixes)
        if isinstance(text, Reject):
            rejects.append(text)
            continue
        yield path, rel, text
