"""Reading email exports: mbox files (Mailman/pipermail archives included) and ``.eml`` files.

Every message becomes an :class:`EmailMessage` or a :class:`Reject` naming the file,
the line of its ``From `` separator and why (bad encoding, missing header, broken
MIME). Nothing is dropped without a reject row.

Pipermail quirks handled: addresses written ``user at host (Name)``, RFC 2047 names in
the comment, folded Subject lines; ``>From `` escapes of mboxrd are undone.
"""

from __future__ import annotations

import datetime as dt
import email
import email.errors
import email.utils
import hashlib
import re
from dataclasses import dataclass
from email.message import EmailMessage as MimeMessage
from pathlib import Path
from typing import TYPE_CHECKING

from codex_pipeline.core.documents import Reject
from codex_pipeline.sources.html_text import html_to_text
from codex_pipeline.sources.tally import count_messages

if TYPE_CHECKING:
    from email.policy import EmailPolicy

# "From sender  Sat Apr  1 04:17:27 2017" (sender may be pipermail's "user at host")
SEPARATOR = re.compile(
    rb"^From (?:\S+(?: at \S+)?) +(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) "
    rb"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{1,2}:\d{2}(?::\d{2})?"
    rb"(?: +[A-Z]{2,5}| +[+-]\d{4})? +\d{4}(?: +[+-]\d{4})?[ \t]*\r?$",
    re.M,
)
_SEP_DATE = re.compile(rb"((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:\w{3}) +\d{1,2} [\d:]+)(?: +\S+)? +(\d{4})")
_MBOXRD_FROM = re.compile(r"^>(>*From )", re.M)
_AT_ADDR = re.compile(r"(?<![\w.@])([\w.+\-=/']+) at ([\w\-]+(?:\.[\w\-]+)+)")
_MSGID = re.compile(r"<([^<>\s]+)>")
_FOLD = re.compile(r"\r?\n(?=[ \t])")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # a raw 8-bit header byte, as the parser keeps it
MAX_BODY_CHARS = 2_000_000

# MIME defects after which the body we would extract is not what the sender wrote.
_FATAL_DEFECTS = (
    email.errors.StartBoundaryNotFoundDefect,
    email.errors.NoBoundaryInMultipartDefect,
    email.errors.MultipartInvariantViolationDefect,
    email.errors.InvalidBase64CharactersDefect,
    email.errors.InvalidBase64LengthDefect,
)


def _mime_policy() -> EmailPolicy[MimeMessage]:
    """The stdlib's modern parsing policy, imported on first use: its header registry is 0.2 s
    of every import of the asset definitions (each Dagster run process pays it)."""
    from email.policy import default
    return default


@dataclass(frozen=True)
class EmailMessage:
    """One parsed message: decoded headers and its text body."""

    message_id: str  # without angle brackets
    from_name: str
    from_address: str
    date: dt.datetime  # timezone-aware
    subject: str
    in_reply_to: str | None
    references: tuple[str, ...]
    body: str
    source_file: str
    record_ref: str | None
    message_id_synthesized: bool = False
    date_from_separator: bool = False

    @property
    def author(self) -> str:
        """The sender's display name, or the address when there is none."""
        return self.from_name or self.from_address

    @property
    def fingerprint(self) -> str:
        """Identity of the content, to tell identical copies from conflicting ones."""
        key = "\x1f".join((self.from_address.lower(), self.date.isoformat(), self.subject, self.body))
        return hashlib.sha256(key.encode()).hexdigest()


class Malformed(ValueError):
    """A message Codex cannot read faithfully; the message is rejected with this reason."""


def split_mbox(data: bytes) -> tuple[list[tuple[int, bytes, bytes]], bytes]:
    """``(line number, separator line, message bytes)`` per message, and any text before the first."""
    starts = [m.start() for m in SEPARATOR.finditer(data)]
    if not starts:
        return [], data
    out = []
    line = data.count(b"\n", 0, starts[0]) + 1
    for k, s in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else len(data)
        nl = data.find(b"\n", s, e)
        sep = data[s : e if nl < 0 else nl]
        body = b"" if nl < 0 else data[nl + 1 : e]
        out.append((line, sep, body))
        line += data.count(b"\n", s, e)
    return out, data[: starts[0]]


def _raw_header(msg: MimeMessage, name: str) -> str | None:
    """The header as stored (surrogate-escaped bytes kept), or None when absent."""
    for k, v in msg.raw_items():
        if k.lower() == name.lower():
            return v if isinstance(v, str) else str(v)
    return None


def _undo_8bit(name: str, value: str) -> str:
    """Raw 8-bit bytes in a header are accepted only when they are valid UTF-8."""
    if not _ESCAPED_BYTE.search(value):
        return value
    raw = value.encode("ascii", "surrogateescape")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Malformed(f"bad encoding in {name} header: 8-bit bytes that are not UTF-8 ({raw[exc.start:exc.start + 4]!r})") from exc


def _decode_words(name: str, value: str) -> str:
    """RFC 2047 encoded words decoded by the stdlib's header parser, folding undone.

    The parser never raises: a word it cannot decode (unknown charset, bytes invalid in
    their charset) comes out as U+FFFD, so a new U+FFFD is what marks the header as lost.
    """
    value = _FOLD.sub("", _undo_8bit(name, value))  # unfold first: the parser keeps a folded EW gap
    if "=?" in value:
        decoded = str(_mime_policy().header_factory("subject", value))  # any unstructured header
        if decoded.count("\ufffd") > value.count("\ufffd"):
            raise Malformed(f"bad encoding in {name} header: an RFC 2047 encoded word does not decode in its charset")
        value = decoded
    return " ".join(value.split())


def _ids(value: str | None) -> list[str]:
    if not value:
        return []
    found = _MSGID.findall(value)
    if not found and value.strip() and " " not in value.strip():
        found = [value.strip().strip("<>")]
    return found


def _parse_from(value: str) -> tuple[str, str]:
    if "@" not in value:
        value = _AT_ADDR.sub(r"\1@\2", value, count=1)
    name, addr = email.utils.parseaddr(value)
    if not addr and not name:
        name = value.strip()
    name = _decode_words("From", name).strip().strip('"').strip()
    return name, addr.strip()


def _separator_date(sep: bytes) -> dt.datetime | None:
    m = _SEP_DATE.search(sep)
    if not m:
        return None
    try:
        d = dt.datetime.strptime(f"{m.group(1).decode()} {m.group(2).decode()}", "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return None
    return d.replace(tzinfo=dt.UTC)


def _fatal_defect(part: MimeMessage) -> str | None:
    bad = [d for d in part.defects if isinstance(d, _FATAL_DEFECTS)]
    return type(bad[0]).__name__ if bad else None


def _decode_part(part: MimeMessage) -> str:
    """A text part's content: transfer encoding undone, its declared charset applied strictly."""
    charset = part.get_content_charset()
    text, error = "", None
    try:
        if charset is None:
            # RFC 2045's default is US-ASCII; undeclared 8-bit bodies in the wild are UTF-8, its superset
            payload = part.get_payload(decode=True)
            text = (payload if isinstance(payload, bytes) else b"").decode("utf-8")
        else:
            text = part.get_content(errors="strict")
    except (LookupError, UnicodeDecodeError) as exc:
        error = exc
    defect = _fatal_defect(part)  # invalid base64 is found while decoding, and explains a bad charset decode
    if defect:
        raise Malformed(f"broken MIME: {defect} in a {part.get_content_type()} part") from error
    if isinstance(error, UnicodeDecodeError):
        if charset is None:
            raise Malformed(f"bad encoding: 8-bit body with no declared charset is not UTF-8 (byte {error.start})") from error
        bad = error.object[error.start : error.start + 4]
        raise Malformed(f"bad encoding: body is not valid {charset} at byte {error.start} ({bad!r})") from error
    if error is not None:
        raise Malformed(f"bad encoding: unknown charset {charset!r}") from error
    return text


def _body(msg: MimeMessage) -> str:
    """The text a reader sees: inline text/plain parts, else text/html as text; other parts noted."""
    defect = _fatal_defect(msg)
    if defect:
        raise Malformed(f"broken MIME: {defect}")
    if not msg.is_multipart():
        ctype = msg.get_content_type()
        if ctype == "text/html":
            return html_to_text(_decode_part(msg))[0]
        if msg.get_content_maintype() != "text" and msg.get("Content-Type"):
            return f"[attachment: {msg.get_filename() or ctype}]"
        return _decode_part(msg)
    plain: list[str] = []
    html: list[str] = []
    notes: list[str] = []
    for part in msg.walk():
        if part.is_multipart():
            defect = _fatal_defect(part)
            if defect:
                raise Malformed(f"broken MIME: {defect}")
            continue
        ctype = part.get_content_type()
        if not part.is_attachment() and ctype == "text/plain":
            plain.append(_decode_part(part))
        elif not part.is_attachment() and ctype == "text/html":
            html.append(_decode_part(part))
        else:
            notes.append(f"[attachment: {part.get_filename() or ctype}]")
    texts = plain or [html_to_text(h)[0] for h in html]
    return "\n\n".join([t.strip("\n") for t in texts] + notes)


def _clean_body(text: str, mbox: bool) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if mbox:
        text = _MBOXRD_FROM.sub(r"\1", text)
    lines = [line.rstrip() for line in text.split("\n")]
    return "\n".join(lines).strip("\n")


def parse_message(raw: bytes, source_file: str, record_ref: str | None, separator: bytes | None = None) -> EmailMessage:
    """Parse one message; raises :class:`Malformed` with the reason when it cannot be read."""
    try:
        msg = email.message_from_bytes(raw, policy=_mime_policy())
    except Exception as exc:  # noqa: BLE001 - the parser is lenient; anything raised is fatal
        raise Malformed(f"unparsable message: {exc}") from exc
    from_raw = _raw_header(msg, "From")
    if from_raw is None or not from_raw.strip():
        raise Malformed("missing From header")
    from_name, from_addr = _parse_from(from_raw)
    if not from_addr and not from_name:
        raise Malformed("From header has no name or address")
    date_raw = _raw_header(msg, "Date")
    date: dt.datetime | None = None
    from_sep = False
    if date_raw and date_raw.strip():
        try:
            date = email.utils.parsedate_to_datetime(" ".join(date_raw.split()))
        except (TypeError, ValueError, IndexError):
            date = None
    if date is None and separator is not None:
        date, from_sep = _separator_date(separator), True
    if date is None:
        shown = (date_raw or "").strip()
        raise Malformed(f"unparseable Date header {shown[:60]!r}" if shown else "missing Date header")
    if date.tzinfo is None:
        date = date.replace(tzinfo=dt.UTC)
    subject = _decode_words("Subject", _raw_header(msg, "Subject") or "")
    body = _clean_body(_body(msg), mbox=separator is not None)
    if len(body) > MAX_BODY_CHARS:
        raise Malformed(f"body of {len(body)} characters is over the {MAX_BODY_CHARS}-character limit")
    ids = _ids(_undo_8bit("Message-ID", _raw_header(msg, "Message-ID") or ""))
    irt = _ids(_undo_8bit("In-Reply-To", _raw_header(msg, "In-Reply-To") or ""))
    refs = tuple(_ids(_undo_8bit("References", _raw_header(msg, "References") or "")))
    synthesized = not ids
    if synthesized:
        key = "\x1f".join((from_addr.lower(), date.isoformat(), subject, body))
        ids = [f"codex-{hashlib.sha256(key.encode()).hexdigest()[:16]}@synthesized.invalid"]
    return EmailMessage(
        message_id=ids[0],
        from_name=from_name,
        from_address=from_addr,
        date=date,
        subject=subject,
        in_reply_to=irt[-1] if irt else None,
        references=refs,
        body=body,
        source_file=source_file,
        record_ref=record_ref,
        message_id_synthesized=synthesized,
        date_from_separator=from_sep,
    )


def _excerpt(raw: bytes) -> str:
    return raw[:300].decode("utf-8", "replace")


def read_mbox(path: Path, day_dir: Path) -> tuple[list[EmailMessage], list[Reject]]:
    """Messages of an mbox file; each unreadable message (or stray text) is its own reject."""
    rel = path.relative_to(day_dir).as_posix()
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [], [Reject(rel, f"unreadable file: {exc.strerror or exc}")]
    parts, prefix = split_mbox(data)
    rejects: list[Reject] = []
    if not parts:
        if data.strip():
            return [], [Reject(rel, "not an mbox file: no 'From ' separator line", excerpt=_excerpt(data))]
        return [], [Reject(rel, "empty mbox file")]
    if prefix.strip():  # stands for no message (rows=0): the messages read are the separators'
        rejects.append(Reject(rel, "text before the first 'From ' separator line", "line 1", _excerpt(prefix), rows=0))
    count_messages(rel, read=len(parts))
    messages = []
    for line, sep, raw in parts:
        ref = f"line {line}"
        try:
            messages.append(parse_message(raw, rel, ref, separator=sep))
        except Malformed as exc:
            rejects.append(Reject(rel, str(exc), ref, _excerpt(raw)))
    return messages, rejects


def read_eml(path: Path, day_dir: Path) -> tuple[list[EmailMessage], list[Reject]]:
    """One message per ``.eml`` file (a leading mbox ``From `` line is tolerated)."""
    rel = path.relative_to(day_dir).as_posix()
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [], [Reject(rel, f"unreadable file: {exc.strerror or exc}")]
    if not data.strip():
        return [], [Reject(rel, "empty .eml file")]
    count_messages(rel, read=1)
    sep = None
    if data.startswith(b"From "):
        nl = data.find(b"\n")
        sep, data = data[: nl if nl >= 0 else len(data)], data[nl + 1 :] if nl >= 0 else b""
    try:
        return [parse_message(data, rel, None, separator=sep)], []
    except Malformed as exc:
        return [], [Reject(rel, str(exc), None, _excerpt(data))]
