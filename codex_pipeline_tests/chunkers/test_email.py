"""email_threads chunker: thread parent, windows over branches, long messages, properties."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from codex_pipeline.chunkers.email import EmailChunker, chunk_email_threads
from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, ChunkType
from codex_pipeline.core.contract_check import validate_chunks
from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.ids import make_chunk_id, make_doc_id
from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.datasets import steps as pipeline
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.sources.email.mbox import EmailMessage
from codex_pipeline.sources.email.reader import load_email_day
from codex_pipeline.sources.email.threads import build_threads, render_thread
from codex_pipeline_tests.conftest import CORPORA, needs_corpus

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "codex_pipeline_tests" / "fixtures" / "email_threads"
SAMPLE = ROOT / "codex_pipeline" / "sample_landing" / "email_threads"
CORPUS = CORPORA / "email"


def check_drafts(d: SourceDocument, drafts: list[ChunkDraft]) -> None:
    assert drafts[0].section_id == "thread" and drafts[0].chunk_type == ChunkType.EMAIL_THREAD
    assert drafts[0].parent_section_id is None
    ids = [x.section_id for x in drafts]
    assert len(ids) == len(set(ids))
    for x in drafts:
        assert 1 <= x.token_count <= MAX_CHUNK_TOKENS
        assert x.token_count == count_tokens(x.text)
        if len(x.spans) == 1:
            s, e = x.spans[0]
            assert d.text[s:e] == x.text
        else:
            assert x.text == "".join(d.text[s:e] for s, e in x.spans)
    for x in drafts[1:]:
        assert x.chunk_type == ChunkType.EMAIL_WINDOW and x.parent_section_id == "thread"
    assert drafts[0].metadata["child_chunk_ids"] == [make_chunk_id(d.doc_id, x.section_id) for x in drafts[1:]]
    # every message is whole in some window, or its parts cover all of its text
    covered = bytearray(len(d.text))
    for x in drafts:
        for s, e in x.spans:
            covered[s:e] = b"\x01" * (e - s)
    missing = [i for i in range(len(d.text)) if not covered[i] and not d.text[i].isspace()]
    assert not missing, repr(d.text[missing[0] : missing[0] + 60])


def fixture_threads() -> dict[str, SourceDocument]:
    return {d.title: d for d in load_email_day(FIXTURES).documents}


def test_thread_parent_and_windows_golden() -> None:
    d = fixture_threads()["Fork test: choosing a queue"]
    drafts = chunk_email_threads(d)
    check_drafts(d, drafts)
    meta = drafts[0].metadata
    assert drafts[0].text.startswith("Thread: Fork test: choosing a queue\nMessages: 7, 2026-03-02 to 2026-03-05, 3 branches\n")
    assert meta["thread_id"] == d.record_id and meta["root_message_id"] == "a@example.org"
    assert (meta["date_start"], meta["date_end"]) == ("2026-03-02T09:00:00+00:00", "2026-03-05T11:00:00+00:00")
    assert [p["name"] for p in meta["participants"]][:3] == ["Ada Lovelace", "Bob Stone", "Cy Young"]
    windows = [(x.section_id, x.metadata["new_message_numbers"], x.metadata.get("context_message_numbers"), len(x.spans))
               for x in drafts[1:]]
    assert windows == [
        ("window.1", [1, 2, 3, 4], None, 1),  # the first branch, verbatim
        ("window.2", [5, 6], [1], 2),  # the fork: message 1 as context, then its branch (two spans)
        ("window.3", [7], [1], 2),  # the reply threaded by subject, under the root
    ]
    assert drafts[2].metadata["fork_of"] == 1
    assert drafts[2].text.startswith("Message 1 (start of thread)")
    assert "Message 5 (reply to message 1, Ada Lovelace)" in drafts[2].text


def test_window_limits_and_overlap() -> None:
    base = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    msgs = [
        EmailMessage(f"m{i}@x", f"P{i % 3}", f"p{i % 3}@x", base + dt.timedelta(hours=i), "Re: Chain",
                     f"m{i - 1}@x" if i else None, (f"m{i - 1}@x",) if i else (), f"Message body number {i}.",
                     "f.mbox", f"line {i}")
        for i in range(25)
    ]
    (thread,) = build_threads(msgs)
    text, payload = render_thread(thread)
    d = SourceDocument(make_doc_id("email_threads", thread.thread_id), thread.thread_id, text, "f.mbox", "Chain", payload)
    drafts = EmailChunker(max_emails_per_chunk=10, max_tokens=1200, overlap_emails=2)(d)
    check_drafts(d, drafts)
    spans = [x.metadata["message_numbers"] for x in drafts[1:]]
    assert spans == [list(range(1, 11)), list(range(9, 19)), list(range(17, 26))]
    assert all(len(x.spans) == 1 for x in drafts[1:])  # overlaps inside a branch stay verbatim
    narrow = EmailChunker(max_emails_per_chunk=3, overlap_emails=0)(d)
    assert [x.metadata["message_numbers"] for x in narrow[1:3]] == [[1, 2, 3], [4, 5, 6]]


def test_long_message_is_split_never_truncated() -> None:
    base = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    long_body = "\n\n".join(
        f"Paragraph {k}: the export retried the upload of file {k} three times and then gave up, "
        f"so the manifest was never written and readers kept the previous snapshot." for k in range(60)
    )
    msgs = [
        EmailMessage("r@x", "Ann", "ann@x", base, "Incident", None, (), "Short question?", "f.mbox", "line 1"),
        EmailMessage("l@x", "Ben", "ben@x", base + dt.timedelta(hours=1), "Re: Incident", "r@x", ("r@x",), long_body,
                     "f.mbox", "line 9"),
    ]
    (thread,) = build_threads(msgs)
    text, payload = render_thread(thread)
    d = SourceDocument(make_doc_id("email_threads", thread.thread_id), thread.thread_id, text, "f.mbox", "Incident", payload)
    drafts = chunk_email_threads(d)
    check_drafts(d, drafts)
    parts = [x for x in drafts if x.section_id.startswith("window.2.part.")]
    assert len(parts) >= 3 and all(x.metadata["parts"] == len(parts) for x in parts)
    assert all(x.token_count <= 512 for x in parts)
    for x in parts[1:]:  # later parts repeat who wrote it
        assert len(x.spans) == 2 and x.text.startswith("Message 2 (reply to message 1, Ann)\nFrom: Ben <ben@x>")
    joined = "".join(d.text[x.spans[-1][0] : x.spans[-1][1]] for x in parts)
    for k in range(60):
        assert f"Paragraph {k}:" in joined


def test_char_budget() -> None:
    d = fixture_threads()["Fork test: choosing a queue"]
    drafts = EmailChunker(max_chars=600)(d)
    check_drafts(d, drafts)
    assert all(len(x.text) <= 600 or "part" in x.section_id or len(x.metadata["message_numbers"]) == 1 for x in drafts[1:])


def test_invalid_parameters() -> None:
    with pytest.raises(ValueError):
        EmailChunker(max_emails_per_chunk=2, overlap_emails=2)
    with pytest.raises(ValueError):
        EmailChunker(max_tokens=4000)


def shipped_threads() -> list[SourceDocument]:
    docs = list(load_email_day(FIXTURES).documents)
    for day in sorted(p for p in SAMPLE.iterdir() if p.is_dir()):
        docs.extend(load_email_day(day).documents)
    return docs


def test_properties_on_shipped_threads_and_stable_ids() -> None:
    docs = shipped_threads()
    for d in docs:
        first = chunk_email_threads(d)
        check_drafts(d, first)
        assert [(x.section_id, x.spans) for x in chunk_email_threads(d)] == [(x.section_id, x.spans) for x in first]
    spec = get_dataset("email_threads")
    day = dt.date(2026, 11, 25)
    a = pipeline.chunk(spec, day, docs)
    b = pipeline.chunk(spec, day, list(reversed(docs)))
    report = validate_chunks(a.table, {d.doc_id: d.text for d in docs})
    assert report.passed, report.failures
    assert sorted(a.table.column("chunk_id").to_pylist()) == sorted(b.table.column("chunk_id").to_pylist())


@needs_corpus(CORPUS)
def test_properties_on_python_committers() -> None:
    for d in load_email_day(CORPUS).documents:
        check_drafts(d, chunk_email_threads(d))


# -- quoting styles and repeated blocks (issue 12) ----------------------------------------------

DISCLAIMER = ("CONFIDENTIALITY NOTICE: This e-mail and any attachments are for the sole use of the intended "
              "recipient(s) and may contain confidential and privileged information.\nAny unauthorized review, "
              "use, disclosure or distribution is prohibited.")
SIGNATURE = "--\nDana Whitfield | Permit Operations | Riverton City Hall\nphone 555-0100"


def _outlook_thread() -> tuple[SourceDocument, list[str]]:
    """Six top-posted Outlook replies, each carrying the whole thread below it and the company disclaimer."""
    base = dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC)
    people = [("Dana", "dana@city.test"), ("Eli", "eli@city.test")]
    own = [f"Update {k}: the permit batch {100 + k} is {['queued', 'parsed', 'checked', 'signed', 'filed', 'closed'][k]} "
           f"and inspector {k} confirmed the parcel list for ward {k + 3}." for k in range(6)]
    msgs: list[EmailMessage] = []
    history = ""
    for k in range(6):
        name, addr = people[k % 2]
        sig = SIGNATURE if name == "Dana" else "--\nEli Marsh | Records | Riverton City Hall\nphone 555-0199"
        body = f"Hi,\n\n{own[k]}\n\n{sig}\n\n{DISCLAIMER}\n"
        if history:
            prev_name, prev_addr = people[(k - 1) % 2]
            body += (f"\n-----Original Message-----\nFrom: {prev_name} <{prev_addr}>\n"
                     f"Sent: Monday, March 2, 2026 {8 + k}:00 AM\nTo: {name} <{addr}>\nSubject: RE: Batch status\n\n"
                     + history)
        history = body
        mid, parent = f"m{k}@city.test", f"m{k - 1}@city.test" if k else None
        msgs.append(EmailMessage(mid, name, addr, base + dt.timedelta(hours=k), "RE: Batch status" if k else "Batch status",
                                 parent, (parent,) if parent else (), body, "out.mbox", f"line {1 + 40 * k}"))
    (thread,) = build_threads(msgs)
    text, payload = render_thread(thread)
    return SourceDocument(make_doc_id("email_threads", thread.thread_id), thread.thread_id, text, "out.mbox",
                          "Batch status", payload), own


def test_outlook_quoted_replies_are_referenced_and_windows_scale_with_content() -> None:
    d, own = _outlook_thread()
    for sentence in own:  # every message's own words exactly once
        assert d.text.count(sentence) == 1
    assert "-----Original Message-----" not in d.text and "Sent: Monday" not in d.text  # headers folded
    assert d.text.count("CONFIDENTIALITY NOTICE") == 1  # the disclaimer once, then referenced
    assert d.text.count("Dana Whitfield | Permit Operations") == 1
    assert "[repeated from message 1: 2 lines]" in d.text  # the disclaimer of message 1
    assert "[repeated from message 1: 3 lines]" in d.text  # Dana's signature
    msgs = d.payload["messages"]
    assert [q["n"] for q in msgs[5]["quotes"]] == [5, 4, 3, 2, 1]  # each quoted message named, newest first
    assert {r["n"] for m in msgs for r in m.get("repeats", [])} == {1, 2}
    drafts = chunk_email_threads(d)
    check_drafts(d, drafts)
    # the text grows with what was written, not with the quoting: before these rules the same thread rendered
    # to 2,874 tokens in 9 chunks with the disclaimer 21 times; now 974 tokens in 5 (the thread and 4 windows)
    per_message = [count_tokens(d.text[m["span"][0] : m["span"][1]]) for m in msgs]
    assert max(per_message[1:]) < 1.5 * min(per_message[1:])  # message 6 is no bigger than message 2
    assert count_tokens(d.text) < 1100 and len(drafts) <= 5


def test_attribution_lines_fold_into_the_reference_and_foreign_quotes_stay() -> None:
    base = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    first = "The nightly export of the permits table failed twice this week on the same parcel file."
    body2 = (f"On Sun, Mar 1, 2026 at 9:00 AM, Ann Lee <ann at x.test>\nwrote:\n> {first}\n\n"
             "Quoting the runbook:\n> Restart the exporter only after the lock file is gone.\n\nI will check the lock.")
    body3 = (f"Ben Ode wrote:\n> I will check the lock.\n>\n> On Sun, Mar 1, 2026 at 9:00 AM, Ann Lee wrote:\n"
             f">> {first}\n\nThanks, that fixed it.")
    msgs = [
        EmailMessage("a@x", "Ann Lee", "ann@x.test", base, "Export", None, (), first, "f.mbox", "line 1"),
        EmailMessage("b@x", "Ben Ode", "ben@x.test", base + dt.timedelta(hours=1), "Re: Export", "a@x", ("a@x",), body2,
                     "f.mbox", "line 9"),
        EmailMessage("c@x", "Ann Lee", "ann@x.test", base + dt.timedelta(hours=2), "Re: Export", "b@x", ("a@x", "b@x"),
                     body3, "f.mbox", "line 20"),
    ]
    (thread,) = build_threads(msgs)
    text, payload = render_thread(thread)
    assert "wrote:" not in text  # every attribution introduced a quote that is now a reference
    assert text.count(first) == 1
    assert "> Restart the exporter only after the lock file is gone." in text  # not in the thread: kept verbatim
    assert "[quoting Ann Lee, 2026-03-01, message 1: 3 lines]" in text  # 2 attribution lines + the quoted line
    assert "Thanks, that fixed it." in text
    assert [q["n"] for q in payload["messages"][2]["quotes"]] == [2, 1]
