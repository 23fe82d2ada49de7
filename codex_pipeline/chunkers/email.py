"""email_threads: a thread summary parent and sliding windows of messages as its children.

The thread's canonical text (see :mod:`codex_pipeline.email_threads`) is a summary
block followed by one block per message in thread order. The chunker emits

* ``thread`` (``email_thread``): the summary block, verbatim: subject, message
  count, date range, participants. Its metadata lists its children's chunk ids.
* ``window.{k}`` (``email_window``): up to ``max_emails_per_chunk`` consecutive
  messages of one branch within the size budget, the first ``overlap_emails`` of
  them repeated from the previous window. A window that opens a fork starts with
  the messages it answers (up to ``overlap_emails`` ancestors) instead, so each
  branch has its context without repeating the whole shared prefix: those windows
  are composed chunks whose spans name the ancestor blocks and the branch run.
* ``window.{k}.part.{j}``: a message too long for any window is split at
  paragraph/sentence boundaries, never truncated; parts after the first repeat the
  message's header lines (a composed chunk of two spans).

Sizes default to 512 tokens (the seed's ``max_chars=2048`` at ~4 characters per
token); ``max_chars=`` selects the seed's character budget. The 1,500-token cap
always holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codex_pipeline.chunkers.sizing import Budget, split_range
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, ChunkType
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.ids import make_chunk_id
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.tokens import count_tokens, count_tokens_batch

DEFAULT_MAX_EMAILS = 10
DEFAULT_MAX_TOKENS = 512
DEFAULT_OVERLAP_EMAILS = 2
THREAD_SECTION = "thread"


@dataclass(frozen=True)
class EmailLimits:
    """Window sizes: messages per window, the size budget (tokens, or the seed's characters), overlap."""

    max_emails_per_chunk: int = DEFAULT_MAX_EMAILS
    max_tokens: int = DEFAULT_MAX_TOKENS
    overlap_emails: int = DEFAULT_OVERLAP_EMAILS
    max_chars: int | None = None  # set: the seed's character budget instead of tokens


class EmailChunker:
    """Reply-graph aware sliding windows over a rendered thread."""

    def __init__(
        self,
        max_emails_per_chunk: int = DEFAULT_MAX_EMAILS,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        overlap_emails: int = DEFAULT_OVERLAP_EMAILS,
        *,
        max_chars: int | None = None,
        cap: int = MAX_CHUNK_TOKENS,
    ) -> None:
        if max_emails_per_chunk < 1:
            raise ValueError("max_emails_per_chunk must be at least 1")
        if not 0 <= overlap_emails < max_emails_per_chunk:
            raise ValueError("overlap_emails must be >= 0 and below max_emails_per_chunk")
        self.max_emails = max_emails_per_chunk
        self.overlap = overlap_emails
        self.budget = (
            Budget("chars", max_chars, cap=cap) if max_chars is not None else Budget("tokens", max_tokens, cap=cap)
        )

    def __call__(self, doc: SourceDocument) -> list[ChunkDraft]:
        """The ``thread`` summary chunk, then one ``window.{k}`` per window; ``[]`` for a thread without messages.

        Windows follow runs of replies and repeat up to ``overlap`` earlier messages as
        context: the previous window's last ones or, at a fork, the messages the branch
        answers. A message over the budget on its own becomes ``window.{k}.part.{j}``
        pieces. The summary's metadata lists every child's chunk id.
        """
        p = doc.payload or {}
        msgs: list[dict[str, Any]] = p.get("messages") or []
        if not msgs:
            return []
        text = doc.text
        spans = [tuple(m["span"]) for m in msgs]
        tokens = count_tokens_batch([text[s:e] for s, e in spans])
        b = self.budget
        size = [b.size(e - s, t) for (s, e), t in zip(spans, tokens)]
        by_n = {m["n"]: i for i, m in enumerate(msgs)}

        windows: list[dict[str, Any]] = []  # {"ctx": [i...], "new": [i...]} or {"split": i}
        i = 0
        while i < len(msgs):
            # a segment is a run of messages where each answers the one before it
            j = i + 1
            while j < len(msgs) and msgs[j]["parent_n"] == msgs[j - 1]["n"]:
                j += 1
            ctx: list[int] = []
            if i > 0:  # a fork or a new root-level reply: its context is what it answers
                a = msgs[i]["parent_n"]
                while a is not None and len(ctx) < self.overlap:
                    ctx.insert(0, by_n[a])
                    a = msgs[by_n[a]]["parent_n"]
            self._windows(i, j, ctx, size, tokens, windows)
            i = j

        sid_of = [f"window.{k}" for k in range(1, len(windows) + 1)]
        drafts: list[ChunkDraft] = []
        summary = self._summary(doc, p)
        child_ids: list[str] = []
        for w, sid in zip(windows, sid_of):
            if "split" in w:
                parts = self._split_message(doc, msgs[w["split"]], sid)
                drafts.extend(parts)
                child_ids.extend(make_chunk_id(doc.doc_id, d.section_id) for d in parts)
                continue
            drafts.append(self._window(doc, msgs, w["ctx"], w["new"], tokens, sid))
            child_ids.append(make_chunk_id(doc.doc_id, sid))
        summary.metadata = {**(summary.metadata or {}), "child_chunk_ids": child_ids}
        return [summary] + drafts

    # -- planning ----------------------------------------------------------------------
    def _windows(
        self, i: int, j: int, ctx: list[int], size: list[int], tokens: list[int], out: list[dict[str, Any]]
    ) -> None:
        b = self.budget

        def fits(idx: list[int]) -> bool:
            return sum(size[x] for x in idx) <= b.max_size and sum(tokens[x] for x in idx) <= b.cap

        while i < j:
            if not fits([i]):
                out.append({"split": i})
                ctx, i = [], i + 1
                continue
            while ctx and (len(ctx) + 1 > self.max_emails or not fits(ctx + [i])):
                ctx = ctx[1:]
            new = [i]
            e = i + 1
            while e < j and len(ctx) + len(new) < self.max_emails and fits(ctx + new + [e]):
                new.append(e)
                e += 1
            out.append({"ctx": ctx, "new": new})
            ctx = (ctx + new)[-self.overlap :] if self.overlap else []
            i = e

    # -- drafting ----------------------------------------------------------------------
    def _summary(self, doc: SourceDocument, p: dict[str, Any]) -> ChunkDraft:
        s, e = p["summary_span"]
        text = doc.text[s:e]
        n = count_tokens(text)
        while n > self.budget.cap:  # only with absurd participant lists: keep whole lines under the cap
            e = doc.text.rfind("\n", s, e - 1) + 1
            text = doc.text[s:e]
            n = count_tokens(text)
        meta = {
            "thread_id": p["thread_id"],
            "root_message_id": p["root_message_id"],
            "root_in_archive": p["root_in_archive"],
            "subject": p["subject"],
            "participants": p["participants"],
            "date_start": p["date_start"],
            "date_end": p["date_end"],
            "message_count": p["message_count"],
            "branch_count": p["branch_count"],
            "message_ids": [m["message_id"] for m in p["messages"]],
        }
        if p.get("broken_links"):
            meta["broken_links"] = p["broken_links"]
        missing = sorted({m["parent_message_id"] for m in p["messages"] if m["missing_parent"]})
        if missing:
            meta["missing_parents"] = missing
        return ChunkDraft(THREAD_SECTION, ChunkType.EMAIL_THREAD, text, ((s, e),), n, metadata=meta)

    def _meta(self, doc: SourceDocument, msgs: list[dict[str, Any]], idx: list[int]) -> dict[str, Any]:
        p = doc.payload or {}
        people: dict[str, dict[str, str]] = {}
        for x in idx:
            m = msgs[x]
            people.setdefault((m["from_address"] or m["from_name"]).lower(),
                              {"name": m["from_name"], "address": m["from_address"]})
        dates = sorted(msgs[x]["date"] for x in idx)
        quotes = [
            {"message_n": msgs[x]["n"], "quoted_n": q["n"], "quoted_message_id": q["message_id"], "lines": q["lines"]}
            for x in idx
            for q in msgs[x]["quotes"]
        ]
        meta: dict[str, Any] = {
            "thread_id": p.get("thread_id"),
            "subject": p.get("subject"),
            "participants": list(people.values()),
            "date_start": dates[0],
            "date_end": dates[-1],
            "message_ids": [msgs[x]["message_id"] for x in idx],
            "message_numbers": [msgs[x]["n"] for x in idx],
        }
        if quotes:
            meta["quotes"] = quotes
        return meta

    def _window(
        self, doc: SourceDocument, msgs: list[dict[str, Any]], ctx: list[int], new: list[int], tokens: list[int], sid: str
    ) -> ChunkDraft:
        text = doc.text
        idx = ctx + new
        contiguous = all(b == a + 1 for a, b in zip(idx, idx[1:]))
        meta = self._meta(doc, msgs, idx)
        meta["new_message_numbers"] = [msgs[x]["n"] for x in new]
        if ctx:
            meta["context_message_numbers"] = [msgs[x]["n"] for x in ctx]
        if contiguous:
            s, e = msgs[idx[0]]["span"][0], msgs[idx[-1]]["span"][1]
            spans: tuple[tuple[int, int], ...] = ((s, e),)
            body = text[s:e]
        else:  # fork context + the branch run: name every span it came from
            groups: list[list[int]] = [[idx[0]]]
            for x in idx[1:]:
                if x == groups[-1][-1] + 1:
                    groups[-1].append(x)
                else:
                    groups.append([x])
            spans = tuple((msgs[g[0]]["span"][0], msgs[g[-1]]["span"][1]) for g in groups)
            body = "".join(text[s:e] for s, e in spans)
            meta["fork_of"] = msgs[new[0]]["parent_n"]
        # message blocks start after a newline with a non-space character, so counts add up
        n = sum(tokens[x] for x in idx)
        return ChunkDraft(sid, ChunkType.EMAIL_WINDOW, body, spans, n, parent_section_id=THREAD_SECTION, metadata=meta)

    def _split_message(self, doc: SourceDocument, m: dict[str, Any], sid: str) -> list[ChunkDraft]:
        text = doc.text
        s, e = m["span"]
        hs, he = m["header_span"]
        b = self.budget
        header = text[hs:he]
        h_size = b.size(len(header), count_tokens(header))
        limit = max(b.max_size // 2, b.max_size - h_size)
        pieces = split_range(text, he, e, b, limit)
        out: list[ChunkDraft] = []
        idx_meta = self._meta(doc, [m], [0])
        for j, piece in enumerate(pieces, 1):
            meta = dict(idx_meta, part=j, parts=len(pieces))
            if j == 1:
                spans: tuple[tuple[int, int], ...] = ((hs, piece.end),)
                body = text[hs : piece.end]
                n = count_tokens(body)
            else:
                spans = ((hs, he), (piece.start, piece.end))
                body = header + text[piece.start : piece.end]
                n = count_tokens(body)
                if n > b.cap:  # the header does not fit beside this part: keep the part alone
                    spans, body, n = ((piece.start, piece.end),), text[piece.start : piece.end], piece.tokens
            out.append(
                ChunkDraft(f"{sid}.part.{j}", ChunkType.EMAIL_WINDOW, body, spans, n,
                           parent_section_id=THREAD_SECTION, metadata=meta)
            )
        return out


def chunk_email_threads(doc: SourceDocument, limits: EmailLimits = EmailLimits()) -> list[ChunkDraft]:
    """The registry's email chunker (default: 10 messages, 512 tokens, 2 messages overlap, 1,500-token cap)."""
    chunker = EmailChunker(limits.max_emails_per_chunk, limits.max_tokens, limits.overlap_emails,
                           max_chars=limits.max_chars)
    return chunker(doc)
