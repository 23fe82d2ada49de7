"""Every landing file of a day accounted for: landed, rejected by name, or skipped with a reason.

Row accounting (:mod:`~codex_pipeline.pipeline.row_accounting`) checks the rows of files
that hold rows; this checks the files themselves, for every reader that takes files
(documents, email, Markdown, HTML, civic records, mapped exports). A file that gave at
least one document *landed*; one a reject names is *rejected*; tombstone files, exports
holding a header and no rows, and exports whose every row a mapping's ``filters:`` left out
or ``duplicates:`` merged into another row are *skipped*, with the reason. Any other file was
read and left no trace: the raw step fails naming it rather than lose it silently.

An mbox holds many messages, which become threads across files: for such files the
email reader reports messages read and messages threaded
(:func:`~codex_pipeline.sources.tally.count_messages`), and read = threaded + rejected
is checked per file as rows are.

The day's outcomes are a small table (``codex.<dataset>_files``: file, outcome,
documents, reason) written beside the raw partition.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from codex_pipeline.core.documents import Reject
from codex_pipeline.pipeline.row_accounting import RawDayFailed
from codex_pipeline.sources.files import landing_entries
from codex_pipeline.sources.tombstones import TOMBSTONE_FILES

FILES_TABLE = "files"
LANDED, REJECTED, SKIPPED, UNACCOUNTED = "landed", "rejected", "skipped", "unaccounted"
FILES_SCHEMA = pa.schema([
    pa.field("partition_date", pa.date32(), nullable=False),
    pa.field("file", pa.string(), nullable=False),
    pa.field("outcome", pa.string(), nullable=False),  # landed | rejected | skipped
    pa.field("documents", pa.int64(), nullable=False),  # documents it gave (threads, for email)
    pa.field("reason", pa.string(), nullable=True),  # why skipped; the first reject's reason when rejected
])
TOMBSTONE_REASON = ("tombstone file: read as retractions, not documents (codex.{dataset}_tombstones; a line not "
                    "applied is in codex.{dataset}_rejects, stage 'tombstone')")
NO_ROWS_REASON = "no rows: the file holds a header and nothing else"


@dataclass(frozen=True)
class FileOutcome:
    """What became of one landing file."""

    file: str
    outcome: str
    documents: int = 0
    reason: str | None = None


@dataclass(frozen=True)
class FileAccount:
    """A day's landing files and their outcomes, in file order; messages per mbox/eml file."""

    files: tuple[FileOutcome, ...] = ()
    messages: tuple[tuple[str, int, int, int], ...] = ()  # (file, read, threaded, rejected)

    def count(self, outcome: str) -> int:
        """Files with this outcome."""
        return sum(f.outcome == outcome for f in self.files)

    def as_metadata(self) -> dict[str, int]:
        """files_found = files_landed + files_rejected + files_skipped, for the raw step's metadata."""
        out = {"files_found": len(self.files), "files_landed": self.count(LANDED),
               "files_rejected": self.count(REJECTED), "files_skipped": self.count(SKIPPED)}
        if self.messages:
            out |= {"messages_read": sum(m[1] for m in self.messages),
                    "messages_landed": sum(m[2] for m in self.messages),
                    "messages_rejected": sum(m[3] for m in self.messages)}
        return out

    def table(self, day: dt.date) -> pa.Table:
        """The outcomes as ``codex.<dataset>_files`` rows."""
        return pa.Table.from_pylist(
            [{"partition_date": day, "file": f.file, "outcome": f.outcome, "documents": f.documents, "reason": f.reason}
             for f in self.files], schema=FILES_SCHEMA)


def _documents_by_file(landed: Mapping[str, int], names: set[str]) -> Counter[str]:
    """Documents per landing file; a document from several files (an email thread: ``a.mbox, b.eml``) counts for each."""
    out: Counter[str] = Counter()
    for key, n in landed.items():
        parts = [key] if key in names else [p for p in key.split(", ") if p in names]
        for p in parts:
            out[p] += n
    return out


def account_files(
    day_dir: Path,
    dataset: str,
    landed: Mapping[str, int],
    rejects: Iterable[Reject],
    rows_read: Mapping[str, int] | None = None,
    messages: Mapping[str, Sequence[int]] | None = None,
) -> FileAccount:
    """The outcome of every entry of ``day_dir`` (:func:`~codex_pipeline.sources.files.landing_entries`).

    ``landed``: documents per ``source_file``; ``rejects``: every reject of the day;
    ``rows_read``: rows per file from the row readers; ``messages``: (read, threaded) per
    mail file. A file none of these explains is ``unaccounted`` (:func:`check_files` fails it).
    """
    rejects = list(rejects)
    names = {p.relative_to(day_dir).as_posix() for p in landing_entries(day_dir)}
    docs = _documents_by_file(landed, names)
    first_reason: dict[str, str] = {}
    message_rejects: Counter[str] = Counter()
    for r in rejects:
        first_reason.setdefault(r.source_file, r.reason)
        if r.stage == "ingest":
            message_rejects[r.source_file] += r.rows
    rows_read = rows_read or {}
    out = []
    for name in sorted(names):
        if docs[name]:
            out.append(FileOutcome(name, LANDED, docs[name]))
        elif name in first_reason:
            out.append(FileOutcome(name, REJECTED, 0, first_reason[name]))
        elif name in TOMBSTONE_FILES:
            out.append(FileOutcome(name, SKIPPED, 0, TOMBSTONE_REASON.format(dataset=dataset)))
        elif rows_read.get(name) == 0:
            out.append(FileOutcome(name, SKIPPED, 0, NO_ROWS_REASON))
        elif name in rows_read and (why := _left_out(name, rows_read)):
            out.append(FileOutcome(name, SKIPPED, 0, why))
        else:
            out.append(FileOutcome(name, UNACCOUNTED))
    mail = tuple((f, read, threaded, message_rejects[f]) for f, (read, threaded) in sorted((messages or {}).items()))
    return FileAccount(tuple(out), mail)


def _left_out(name: str, rows_read: Mapping[str, int]) -> str | None:
    """Why a file whose every row was filtered out or merged into another row landed nothing (None: not so).

    ``rows_read`` is the row readers' tally (:class:`~codex_pipeline.sources.tally.Tally`), which
    also counts, per file, rows a mapping's ``filters:`` left out and rows merged by ``duplicates:``.
    """
    merged = getattr(rows_read, "merged", {}).get(name, 0)
    filtered = getattr(rows_read, "filtered", {}).get(name, 0)
    if not (merged or filtered) or merged + filtered != rows_read[name]:
        return None
    parts = ([f"{filtered} left out by the mapping's filters"] if filtered else []) + (
        [f"{merged} merged into rows with the same id"] if merged else [])
    return f"no row of its own landed: of {rows_read[name]} row(s) read, " + " and ".join(parts)


def check_files(account: FileAccount, dataset: str, day: dt.date) -> None:
    """:class:`RawDayFailed` (one line) naming a file that is neither landed, rejected nor skipped, or a
    mail file whose messages read are not threaded + rejected."""
    where = f"{dataset} {day}"
    for f in account.files:
        if f.outcome == UNACCOUNTED:
            raise RawDayFailed(
                f"{where}: {f.file} was read but neither landed, rejected nor skipped; nothing was published for "
                "the day: a bug in the reader, please report it with the file (move the file out of the day to "
                "land the rest)")
    for file, read, threaded, rejected in account.messages:
        if read != threaded + rejected:
            raise RawDayFailed(
                f"{where}: {file}: {read} message(s) read but {threaded} threaded and {rejected} rejected; nothing "
                "was published for the day: a bug in the email reader, please report it with the file")
