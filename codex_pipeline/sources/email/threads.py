"""Reply threads rebuilt from Message-ID / In-Reply-To / References, rendered as one text.

Threading follows jwz's algorithm, made deterministic: messages are linked in
(date, Message-ID) order, so the result never depends on file or message order.

* A message's own In-Reply-To/References decide its parent; References also link
  the ancestors they list. An id that is referenced but absent becomes a *ghost*
  container, so replies to one missing message still share a thread, whose id is
  derived from that (missing) root Message-ID and stays the same when it arrives.
* A link that would close a reply cycle is ignored and recorded in ``broken_links``.
* A message with no reply headers whose subject is a reply ("Re: x") joins the
  earliest thread with the same normalized subject (``[list]`` tags, Re:/Fwd: and
  ``[Fwd: …]`` wrappers stripped).

The canonical text is the thread rendered once, depth-first (children by date):
a summary block, then one block per message. A fork is not a copy of the shared
prefix: every message appears once, the branch records which message it answers.
Quoted lines (``>``) that repeat an earlier message of the thread are replaced by a
reference such as ``[quoting Antoine Pitrou, 2017-04-01, message 3: 12 lines]``;
quotes of anything else stay verbatim.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from codex_pipeline.sources.email.mbox import EmailMessage
from codex_pipeline.sources.email.quoting import MIN_REPEAT_CHARS, attribution_lines, paragraphs, quoted_lines

UTC = dt.UTC
MIN_QUOTE_CHARS = 20  # shorter quoted runs ("> +1") stay verbatim: too ambiguous to attribute
MAX_LISTED_PARTICIPANTS = 40

_REPLY_PREFIX = re.compile(r"(?:re|fwd?|fw|aw|sv|wg|tr|antw)\s*(?:\[\d+\]|\(\d+\))?\s*:\s*", re.I)
_LIST_TAG = re.compile(r"\[[^\]:]*\]\s*")
_FWD_WRAP = re.compile(r"\[(?:fwd?|fw)\s*:\s*(.*)\]\s*$", re.I)
_QUOTE = re.compile(r"^[ \t]*>")
_MARKERS = re.compile(r"^[\s>]+")


def _subject_parts(subject: str) -> tuple[str, bool]:
    """(subject without list tags and reply/forward prefixes, whether any reply prefix was there)."""
    s = " ".join(subject.split())
    reply = False
    while True:
        t = s
        m = _LIST_TAG.match(t)
        if m:
            t = t[m.end() :]
        m = _REPLY_PREFIX.match(t)
        if m:
            t, reply = t[m.end() :], True
        m = _FWD_WRAP.match(t)
        if m:
            t, reply = m.group(1), True
        if t == s:
            return s.strip(), reply
        s = t.strip()


def normalize_subject(subject: str) -> str:
    """Subject key for threading: no list tags, no Re:/Fwd:, case-folded."""
    return _subject_parts(subject)[0].casefold()


def display_subject(subject: str) -> str:
    """Subject as shown in the rendering: list tags (``[python-committers]``) removed."""
    s = " ".join(subject.split())
    out, pos = [], 0
    while pos < len(s):
        m = _LIST_TAG.match(s, pos)
        if m and not s[m.start() + 1 : m.end()].lower().startswith(("fwd", "fw:")):
            pos = m.end()
            continue
        m = _REPLY_PREFIX.match(s, pos)
        if m:
            out.append(s[pos : m.end()])
            pos = m.end()
            continue
        break
    return ("".join(out) + s[pos:]).strip() or "(no subject)"


@dataclass(eq=False)
class _Node:
    id: str
    msg: EmailMessage | None = None
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)
    how: str = "root"  # references | in-reply-to | subject

    def first(self) -> tuple[dt.datetime, str]:
        """(date, id) of the earliest real message in this subtree, for ordering."""
        best = (self.msg.date.astimezone(UTC), self.id) if self.msg else None
        for c in self.children:
            f = c.first()
            if best is None or f < best:
                best = f
        return best or (dt.datetime.max.replace(tzinfo=UTC), self.id)


def _is_ancestor(a: _Node, b: _Node) -> bool:
    """``a`` is ``b`` or one of its ancestors."""
    x: _Node | None = b
    while x is not None:
        if x is a:
            return True
        x = x.parent
    return False


def _link(child: _Node, parent: _Node, how: str) -> None:
    if child.parent is not None:
        child.parent.children.remove(child)
    child.parent = parent
    child.how = how
    parent.children.append(child)


@dataclass(frozen=True)
class ThreadMessage:
    """A message placed in its thread: its number, parent, depth, and which header linked it (``how``)."""

    msg: EmailMessage
    n: int  # 1-based position in thread order
    parent_n: int | None  # nearest ancestor present in the archive
    parent_id: str | None  # direct parent's Message-ID (may be missing)
    missing_parent: bool  # the direct parent is referenced but not in the archive
    depth: int
    how: str  # root | references | in-reply-to | subject


@dataclass
class Thread:
    """One conversation, messages depth first (each before its replies, siblings by date).

    ``root_id`` is the root's Message-ID, which may name a message not in the archive
    (``root_in_archive`` False: a fragment). ``broken_links`` lists reply links ignored
    (a reply cycle).
    """

    thread_id: str
    root_id: str
    root_in_archive: bool
    messages: list[ThreadMessage]
    broken_links: list[dict[str, str]]

    @property
    def subject(self) -> str:
        """The first message's subject without list tags and reply/forward prefixes; ``(no subject)`` if empty."""
        return _subject_parts(self.messages[0].msg.subject)[0] or "(no subject)"


def thread_id_for(root_message_id: str, first_message_id: str | None = None) -> str:
    """Stable thread id: 16 hex of SHA-256 of the root Message-ID.

    A thread whose root is not in the archive is a fragment (replies landed without the
    message they answer, often on a later day than the thread itself). Its id also
    hashes its first message: otherwise a day of late replies would take the id of the
    whole thread landed earlier and hide it wherever the latest partition of a document
    wins. ``root_message_id`` in the payload still joins the fragments of one thread.
    """
    key = root_message_id if first_message_id is None else f"{root_message_id}\x1f{first_message_id}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def build_threads(messages: list[EmailMessage]) -> list[Thread]:
    """Threads of unique-Message-ID messages, in order of their first message."""
    ordered = sorted(messages, key=lambda m: (m.date.astimezone(UTC), m.message_id))
    nodes: dict[str, _Node] = {}
    broken: dict[str, list[dict[str, str]]] = {}

    def node(i: str) -> _Node:
        n = nodes.get(i)
        if n is None:
            n = nodes[i] = _Node(i)
        return n

    for m in ordered:
        me = node(m.message_id)
        me.msg = m
        chain: list[str] = []
        for r in m.references:
            if r != m.message_id and r not in chain:
                chain.append(r)
        irt = m.in_reply_to if m.in_reply_to != m.message_id else None
        if irt:
            chain = chain[: chain.index(irt) + 1] if irt in chain else chain + [irt]
        for a, b in zip(chain, chain[1:]):
            pa, pb = node(a), node(b)
            if pb.parent is None and not _is_ancestor(pb, pa):
                _link(pb, pa, "references")
        if chain:
            p = node(chain[-1])
            if me.parent is not p:
                if _is_ancestor(me, p):
                    broken.setdefault(m.message_id, []).append(
                        {"message_id": m.message_id, "ignored_parent": p.id, "reason": "reply cycle"}
                    )
                else:
                    _link(me, p, "in-reply-to" if irt and chain[-1] == irt else "references")

    # replies that carry no reply headers: thread them by subject
    roots = sorted((n for n in nodes.values() if n.parent is None), key=_Node.first)
    by_subject: dict[str, _Node] = {}
    for root in roots:
        first = nodes[root.first()[1]].msg if root.first()[1] in nodes else None
        key = normalize_subject(first.subject) if first else ""
        msg = root.msg
        if msg and key and not msg.references and not msg.in_reply_to and _subject_parts(msg.subject)[1]:
            target = by_subject.get(key)
            if target is not None:
                _link(root, target, "subject")
                continue
        if key:
            by_subject.setdefault(key, root)

    threads = []
    for root in sorted((n for n in nodes.values() if n.parent is None), key=_Node.first):
        threads.append(_flatten(root, broken))
    return [t for t in threads if t.messages]


def _flatten(root: _Node, broken: dict[str, list[dict[str, str]]]) -> Thread:
    out: list[ThreadMessage] = []
    links: list[dict[str, str]] = []
    number: dict[str, int] = {}

    def visit(n: _Node, real_parent: int | None, depth: int) -> None:
        nxt_parent, nxt_depth = real_parent, depth
        if n.msg is not None:
            k = len(out) + 1
            number[n.id] = k
            missing = n.parent is not None and n.parent.msg is None
            out.append(
                ThreadMessage(
                    n.msg, k, real_parent, n.parent.id if n.parent else None, missing, depth,
                    n.how if n.parent is not None else "root",
                )
            )
            links.extend(broken.get(n.id, []))
            nxt_parent, nxt_depth = k, depth + 1
        for c in sorted(n.children, key=_Node.first):
            visit(c, nxt_parent, nxt_depth)

    visit(root, None, 0)
    present = root.msg is not None
    tid = thread_id_for(root.id) if present or not out else thread_id_for(root.id, out[0].msg.message_id)
    return Thread(tid, root.id, present, out, links)


# -- quotes ---------------------------------------------------------------------------


def _norm(s: str) -> str:
    return " ".join(s.split())


def own_text(body: str) -> str:
    """A message's own words (quoted lines and Outlook blocks left out), whitespace-normalized, for matching."""
    lines = body.split("\n")
    quoted, fold = quoted_lines(lines)
    header = {k for body_at, start in fold.items() for k in range(start, body_at)}
    return _norm(" ".join(_MARKERS.sub("", line) for k, line in enumerate(lines) if not quoted[k] and k not in header))


@dataclass(frozen=True)
class QuoteRef:
    """A quoted run :func:`dedup_quotes` replaced: the message it repeats and how many lines it held."""

    quoted_n: int
    quoted_message_id: str
    lines: int


def _plural(k: int) -> str:
    return f"{k} line" if k == 1 else f"{k} lines"


def dedup_quotes(body: str, candidates: list[tuple[ThreadMessage, str]]) -> tuple[str, list[QuoteRef]]:
    """Replace quoted runs that repeat a candidate's own text by a reference line.

    ``candidates`` are earlier messages of the thread with their :func:`own_text`,
    best first (ancestors, then the most recent). Unmatched quote lines are kept.
    """
    lines = body.split("\n")
    quoted, fold = quoted_lines(lines)  # ">" lines and Outlook blocks (sources.email.quoting)
    out: list[str] = []
    refs: list[QuoteRef] = []
    i = 0
    while i < len(lines):
        if not quoted[i]:
            out.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and quoted[j]:
            j += 1
        norms = [_norm(_MARKERS.sub("", line)) for line in lines[i:j]]
        items: list[list[Any]] = []  # ["line", text, blank?] | ["ref", message, count]
        k = 0
        while k < len(norms):
            best: tuple[int, ThreadMessage, str, str] | None = None  # (end, message, matched text, own)
            if norms[k]:
                for tm, own in candidates:
                    if norms[k] not in own:
                        continue
                    e, acc, good_end, good_acc = k, "", None, ""
                    while e < len(norms):
                        t = f"{acc} {norms[e]}".strip() if norms[e] else acc
                        if t and t not in own:
                            break
                        acc, e = t, e + 1
                        if norms[e - 1]:
                            good_end, good_acc = e, acc
                    if good_end is not None and len(good_acc) >= MIN_QUOTE_CHARS:
                        if best is None or good_end > best[0]:
                            best = (good_end, tm, good_acc, own)
                        if good_end == len(norms):
                            break
            if best is None:
                items.append(["line", lines[i + k], not norms[k]])
                k += 1
                continue
            end, tm, acc, own = best
            count = end - k
            head = i + k - fold.get(i + k, i + k)  # an Outlook header run inside this quote, just before the match
            if not 0 < head <= k or not all(it[0] == "line" for it in items[len(items) - head :]):
                tail = [_MARKERS.sub("", it[1]) for it in items[-2:] if it[0] == "line"]
                head = attribution_lines(tail[-2:]) if len(tail) == len(items[-2:]) else 0  # "> On …, X wrote:"
            if head:
                del items[len(items) - head :]
                count += head
            if i + end == j:  # the quote ran to its block's end: absorb lines a wrapping archive un-quoted
                while j < len(lines) and lines[j].strip() and not quoted[j]:
                    t = f"{acc} {_norm(lines[j])}"
                    if t not in own:
                        break
                    acc, j, count = t, j + 1, count + 1
            items.append(["ref", tm, count])
            k = end
        # empty quote lines (">") next to a reference belong to it
        merged: list[list[Any]] = []
        for it in items:
            if it[0] == "line" and it[2] and merged and merged[-1][0] == "ref":
                merged[-1][2] += 1
            elif it[0] == "ref" and merged and merged[-1][0] == "line" and merged[-1][2]:
                blanks = 0
                while merged and merged[-1][0] == "line" and merged[-1][2]:
                    merged.pop()
                    blanks += 1
                if merged and merged[-1][0] == "ref" and merged[-1][1] is it[1]:
                    merged[-1][2] += blanks + it[2]
                else:
                    merged.append(["ref", it[1], it[2] + blanks])
            elif it[0] == "ref" and merged and merged[-1][0] == "ref" and merged[-1][1] is it[1]:
                merged[-1][2] += it[2]
            else:
                merged.append(it)
        if merged and merged[0][0] == "ref":  # the reference names who and when: fold what introduced the quote
            lead = i - fold[i] if i in fold and fold[i] < i else attribution_lines(out)
            if lead:
                del out[-lead:]
                merged[0][2] += lead
        run: list[tuple[ThreadMessage, int]] = []  # adjacent references: one line (nested quoting stays one line)
        for it in [*merged, ["end"]]:
            if it[0] == "ref":
                run.append((it[1], it[2]))
                refs.append(QuoteRef(it[1].n, it[1].msg.message_id, it[2]))
                continue
            if run:
                out.append(_quote_line(run))
                run = []
            if it[0] == "line":
                out.append(it[1])
        i = j
    return "\n".join(out), refs


def _quote_line(run: list[tuple[ThreadMessage, int]]) -> str:
    """``[quoting Ann, 2026-03-01, message 3: 12 lines]``; several quoted messages in a row: ``[quoting messages 5, 4: 30 lines]``."""
    if len(run) == 1:
        tm, count = run[0]
        return f"[quoting {tm.msg.author}, {tm.msg.date.strftime('%Y-%m-%d')}, message {tm.n}: {_plural(count)}]"
    numbers = ", ".join(str(n) for n in dict.fromkeys(tm.n for tm, _ in run))
    return f"[quoting messages {numbers}: {_plural(sum(c for _, c in run))}]"


@dataclass(frozen=True)
class RepeatRef:
    """A paragraph :func:`dedup_repeats` replaced: the message it first appeared in and its line count."""

    repeated_n: int
    lines: int


_REFERENCE_LINE = re.compile(r"^\[(?:quoting|repeated from) [^\n]*\]$")


def dedup_repeats(body: str, n: int, seen: dict[str, int]) -> tuple[str, list[RepeatRef]]:
    """Replace paragraphs that already appeared in an earlier message (``seen``: text → message) by a reference.

    Signatures, disclaimers and list footers are the paragraphs a thread repeats
    (see :mod:`codex_pipeline.sources.email.quoting`). ``seen`` gains this message's
    paragraphs. Reference lines and paragraphs under :data:`MIN_REPEAT_CHARS` are left as they are.
    """
    lines = body.split("\n")
    out: list[str] = []
    refs: list[RepeatRef] = []
    at = 0
    for s, e in paragraphs(lines):
        out.extend(lines[at:s])
        at = e
        key = _norm(" ".join(_MARKERS.sub("", line) for line in lines[s:e]))
        if len(key) < MIN_REPEAT_CHARS or any(_REFERENCE_LINE.match(line) for line in lines[s:e]):
            out.extend(lines[s:e])
            continue
        first = seen.setdefault(key, n)
        if first == n:
            out.extend(lines[s:e])
            continue
        out.append(f"[repeated from message {first}: {_plural(e - s)}]")
        refs.append(RepeatRef(first, e - s))
    out.extend(lines[at:])
    return "\n".join(out), refs


# -- rendering --------------------------------------------------------------------------


def _who(m: EmailMessage) -> str:
    if m.from_name and m.from_address:
        return f"{m.from_name} <{m.from_address}>"
    return m.from_name or m.from_address


def participants(messages: list[EmailMessage]) -> list[dict[str, Any]]:
    """Authors in order of first message, with how many messages each wrote."""
    seen: dict[str, dict[str, Any]] = {}
    for m in messages:
        key = (m.from_address or m.from_name).lower()
        if key not in seen:
            seen[key] = {"name": m.from_name, "address": m.from_address, "messages": 0}
        seen[key]["messages"] += 1
    return list(seen.values())


def _iso(d: dt.datetime) -> str:
    return d.astimezone(UTC).isoformat()


def render_thread(thread: Thread) -> tuple[str, dict[str, Any]]:
    """The thread's canonical text and the payload that locates every message in it."""
    msgs = [tm.msg for tm in thread.messages]
    people = participants(msgs)
    dates = sorted(m.date.astimezone(UTC) for m in msgs)
    branches = 1 + sum(1 for k, tm in enumerate(thread.messages) if k and tm.parent_n != tm.n - 1)
    listed = [
        (f"{p['name']} <{p['address']}>" if p["name"] and p["address"] else p["name"] or p["address"])
        + f" ({p['messages']})"
        for p in people[:MAX_LISTED_PARTICIPANTS]
    ]
    if len(people) > MAX_LISTED_PARTICIPANTS:
        listed.append(f"and {len(people) - MAX_LISTED_PARTICIPANTS} more")
    summary = [
        f"Thread: {thread.subject}",
        f"Messages: {len(msgs)}, {dates[0]:%Y-%m-%d} to {dates[-1]:%Y-%m-%d}"
        + (f", {branches} branches" if branches > 1 else ""),
        f"Participants: {', '.join(listed)}",
    ]
    if not thread.root_in_archive:
        summary.append(f"Thread root not in this archive: <{thread.root_id}>")
    pieces = ["\n".join(summary) + "\n\n"]
    pos = len(pieces[0])
    summary_span = [0, pos]

    own: dict[int, str] = {}
    seen: dict[str, int] = {}  # paragraph text -> first message showing it (dedup_repeats)
    by_n = {tm.n: tm for tm in thread.messages}
    records: list[dict[str, Any]] = []
    for idx, tm in enumerate(thread.messages):
        m = tm.msg
        ancestors: list[int] = []
        p = tm.parent_n
        while p is not None:
            ancestors.append(p)
            p = by_n[p].parent_n
        order = ancestors + [k for k in range(tm.n - 1, 0, -1) if k not in ancestors]
        body, refs = dedup_quotes(m.body, [(by_n[k], own[k]) for k in order])
        body, repeats = dedup_repeats(body, tm.n, seen)
        own[tm.n] = own_text(m.body)
        if tm.how == "subject":
            where = f"message {tm.parent_n}" if tm.parent_n else "this thread"
            note = f"(no reply headers; same subject as {where})"
        elif tm.missing_parent:
            note = "(reply to a message not in this archive)"
        elif tm.parent_n is None:
            note = "(start of thread)"
        else:
            note = f"(reply to message {tm.parent_n}, {by_n[tm.parent_n].msg.author})"
        header = (
            f"Message {tm.n} {note}\n"
            f"From: {_who(m)}\n"
            f"Date: {m.date:%Y-%m-%d %H:%M %z}\n"
            f"Subject: {display_subject(m.subject)}\n\n"
        )
        last = idx == len(thread.messages) - 1
        block = header + (body.strip("\n") or "(no text)") + ("\n" if last else "\n\n")
        start = pos
        pieces.append(block)
        pos += len(block)
        rec: dict[str, Any] = {
            "n": tm.n,
            "message_id": m.message_id,
            "parent_n": tm.parent_n,
            "parent_message_id": tm.parent_id,
            "missing_parent": tm.missing_parent,
            "threaded_by": tm.how,
            "depth": tm.depth,
            "from_name": m.from_name,
            "from_address": m.from_address,
            "date": _iso(m.date),
            "subject": m.subject,
            "source_file": m.source_file,
            "record_ref": m.record_ref,
            "span": [start, pos],
            "header_span": [start, start + len(header)],
            "quotes": [{"n": q.quoted_n, "message_id": q.quoted_message_id, "lines": q.lines} for q in refs],
        }
        if repeats:
            rec["repeats"] = [{"n": r.repeated_n, "lines": r.lines} for r in repeats]
        if m.message_id_synthesized:
            rec["message_id_synthesized"] = True
        if m.date_from_separator:
            rec["date_from_separator"] = True
        records.append(rec)
    text = "".join(pieces)
    payload = {
        "thread_id": thread.thread_id,
        "root_message_id": thread.root_id,
        "root_in_archive": thread.root_in_archive,
        "subject": thread.subject,
        "participants": people,
        "date_start": _iso(dates[0]),
        "date_end": _iso(dates[-1]),
        "message_count": len(msgs),
        "branch_count": branches,
        "summary_span": summary_span,
        "messages": records,
        "broken_links": thread.broken_links,
    }
    return text, payload
