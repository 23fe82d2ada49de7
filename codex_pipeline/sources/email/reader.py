"""The ``email_threads`` landing format: mbox and ``.eml`` files; one document per reply thread.

All files of a landing day are read together, so a thread may span an mbox and
loose ``.eml`` files. The document is the thread (record id = thread id, derived
from the root Message-ID); its canonical text is the thread rendering of
:mod:`codex_pipeline.email_threads`, and its payload locates every message in it.

Duplicate Message-IDs are resolved deterministically (whatever the file order): the
copy with the earliest date, then the smallest content hash, is kept; every other
copy becomes a reject that says whether it was identical or conflicting.
"""

from __future__ import annotations

from pathlib import Path

from codex_pipeline.core.documents import LoadResult, Reject, SourceDocument
from codex_pipeline.core.ids import make_doc_id
from codex_pipeline.sources.email.mbox import EmailMessage, read_eml, read_mbox
from codex_pipeline.sources.email.threads import build_threads, render_thread
from codex_pipeline.sources.files import landing_files
from codex_pipeline.sources.tally import count_messages

DATASET = "email_threads"
READERS = {".mbox": read_mbox, ".mbx": read_mbox, ".eml": read_eml}


def _where(m: EmailMessage) -> str:
    return m.source_file + (f" {m.record_ref}" if m.record_ref else "")


def _order(m: EmailMessage) -> tuple:
    """Earliest date, then content hash, then file and position: independent of reading order."""
    line = m.record_ref.split()[-1] if m.record_ref else "0"
    return (m.date, m.fingerprint, m.source_file, int(line) if line.isdigit() else 0)


def dedupe_messages(messages: list[EmailMessage]) -> tuple[list[EmailMessage], list[Reject]]:
    """One message per Message-ID; the others are rejected with the copy that was kept."""
    groups: dict[str, list[EmailMessage]] = {}
    for m in messages:
        groups.setdefault(m.message_id, []).append(m)
    kept: list[EmailMessage] = []
    rejects: list[Reject] = []
    for mid, copies in groups.items():
        copies.sort(key=_order)
        keep = copies[0]
        kept.append(keep)
        for dup in copies[1:]:
            same = dup.fingerprint == keep.fingerprint
            reason = (
                f"duplicate Message-ID <{mid}>: identical copy of the message kept from {_where(keep)}"
                if same
                else f"duplicate Message-ID <{mid}> with different content: kept the copy from {_where(keep)} "
                f"(earliest date, then content hash); this copy is not threaded"
            )
            rejects.append(Reject(dup.source_file, reason, dup.record_ref, excerpt=dup.body[:300]))
    return kept, rejects


def load_email_day(day_dir: Path) -> LoadResult:
    """Read every mbox/.eml file of a landing day and rebuild its threads."""
    result = LoadResult()
    messages: list[EmailMessage] = []
    for path in landing_files(day_dir):
        reader = READERS.get(path.suffix.lower())
        if reader is None:
            result.rejects.append(
                Reject(
                    path.relative_to(day_dir).as_posix(),
                    f"unsupported file type {path.suffix or '(none)'!r}: email_threads takes .mbox and .eml files",
                )
            )
            continue
        got, bad = reader(path, day_dir)
        messages.extend(got)
        result.rejects.extend(bad)
    kept, dups = dedupe_messages(messages)
    result.rejects.extend(dups)
    for thread in build_threads(kept):
        text, payload = render_thread(thread)
        for tm in thread.messages:
            count_messages(tm.msg.source_file, threaded=1)  # the raw step checks read = threaded + rejected
        files = sorted({tm.msg.source_file for tm in thread.messages})
        result.documents.append(
            SourceDocument(
                doc_id=make_doc_id(DATASET, thread.thread_id),
                record_id=thread.thread_id,
                text=text,
                source_file=", ".join(files),
                title=thread.subject,
                payload=payload,
            )
        )
    return result
