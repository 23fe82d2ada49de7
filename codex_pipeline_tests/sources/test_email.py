"""email_threads landing: mbox/.eml parsing, rejects, duplicates and thread reconstruction."""

from __future__ import annotations

import base64
import datetime as dt
import email.header
import shutil
from email.message import EmailMessage as MimeMessage
from pathlib import Path

import pytest

from codex_pipeline.sources.email.mbox import Malformed, parse_message, read_mbox, split_mbox
from codex_pipeline.sources.email.reader import dedupe_messages, load_email_day
from codex_pipeline.sources.email.threads import (
    build_threads,
    dedup_quotes,
    display_subject,
    normalize_subject,
    thread_id_for,
)
from codex_pipeline_tests.conftest import CORPORA, needs_corpus

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "codex_pipeline_tests" / "fixtures" / "email_threads"
SAMPLE = ROOT / "codex_pipeline" / "sample_landing" / "email_threads"
CORPUS = CORPORA / "email"


def by_subject(result):
    return {d.title: d for d in result.documents}


# -- parsing ---------------------------------------------------------------------------------


def test_pipermail_message_headers() -> None:
    raw = (
        b"From: martin at v.loewis.de (=?ISO-8859-1?Q?=22Martin_v=2E_L=F6wis=22?=)\n"
        b"Date: Sat, 1 Apr 2017 10:17:27 +0200\n"
        b"Subject: [python-committers] I have blocked Wes Turner from the Python\n org on GitHub\n"
        b"In-Reply-To: <x@y>\nReferences: <w@y>\n <x@y>\nMessage-ID: <m@y>\n\nbody\n"
    )
    m = parse_message(raw, "a.mbox", "line 1", separator=b"From martin at v.loewis.de  Sat Apr  1 04:17:27 2017")
    assert (m.from_name, m.from_address) == ("Martin v. Löwis", "martin@v.loewis.de")
    assert m.subject == "[python-committers] I have blocked Wes Turner from the Python org on GitHub"
    assert (m.message_id, m.in_reply_to, m.references) == ("m@y", "x@y", ("w@y", "x@y"))
    assert m.date == dt.datetime(2017, 4, 1, 8, 17, 27, tzinfo=dt.UTC)


def test_separator_lines_are_strict() -> None:
    data = (
        b"From a at b.org  Mon Mar  2 09:00:00 2026\nFrom: a at b.org (A)\nDate: Mon, 2 Mar 2026 09:00:00 +0000\n"
        b"Message-ID: <1@b>\n\nFrom here on, this is body text.\nFrom the start it was.\n\n"
        b"From MAILER-DAEMON Fri Jul  8 12:08:34 2011\nFrom: x@y\nDate: Fri, 8 Jul 2011 12:08:34 +0000\n\nsecond\n"
    )
    parts, prefix = split_mbox(data)
    assert prefix == b"" and [line for line, _, _ in parts] == [1, 9]
    assert b"From here on" in parts[0][2]


def test_subject_normalization() -> None:
    assert normalize_subject("Re: [python-committers] Re: Codecov and PR") == "codecov and pr"
    assert normalize_subject("[python-committers] [PSF-Members] [Fwd: Re: Push rights for Ross]") == "push rights for ross"
    assert normalize_subject("AW: Fwd: RE[2]: Plan") == "plan"
    assert display_subject("Re: [python-committers] Codecov and PR") == "Re: Codecov and PR"
    assert display_subject("[Fwd: Re: Push rights]") == "[Fwd: Re: Push rights]"


def test_fixture_mbox_rejects_each_malformed_message_with_its_reason() -> None:
    messages, rejects = read_mbox(FIXTURES / "threads.mbox", FIXTURES)
    assert len(messages) == 13
    reasons = {r.record_ref: r.reason for r in rejects}
    assert reasons == {
        "line 173": "bad encoding: unknown charset 'x-no-such-charset'",
        "line 182": "missing From header",
        "line 189": "bad encoding in Subject header: 8-bit bytes that are not UTF-8 (b'\\xe9 me')",
    }
    ada = next(m for m in messages if m.message_id == "a@example.org")
    assert "\nFrom the archive: this line was escaped" in ada.body  # mboxrd >From undone
    assert "From here on, assume" in ada.body  # a body line starting with From is not a separator


def test_eml_and_malformed_mime(tmp_path: Path) -> None:
    (tmp_path / "nodate.eml").write_text("From: a@b\nSubject: x\nMessage-ID: <1@b>\n\nbody\n")
    (tmp_path / "mime.eml").write_text(
        "From: a@b\nDate: Mon, 2 Mar 2026 09:00:00 +0000\nMIME-Version: 1.0\nContent-Type: multipart/mixed\n\nparts\n"
    )
    (tmp_path / "badutf8.eml").write_bytes(
        b"From: a@b\nDate: Mon, 2 Mar 2026 09:00:00 +0000\nContent-Type: text/plain; charset=utf-8\n\ncaf\xe9\n"
    )
    (tmp_path / "b64.eml").write_text(
        "From: a@b\nDate: Mon, 2 Mar 2026 09:00:00 +0000\nContent-Type: text/plain; charset=utf-8\n"
        "Content-Transfer-Encoding: base64\n\nQ2Fmw6kgb3BlbiB0b2RheS4=\n"
    )
    (tmp_path / "notes.txt").write_text("x")
    result = load_email_day(tmp_path)
    reasons = {r.source_file: r.reason for r in result.rejects}
    assert reasons["nodate.eml"] == "missing Date header"
    assert reasons["mime.eml"] == "broken MIME: NoBoundaryInMultipartDefect"
    assert reasons["badutf8.eml"].startswith("bad encoding: body is not valid utf-8")
    assert reasons["notes.txt"].startswith("unsupported file type '.txt'")
    (d,) = result.documents
    assert "Café open today." in d.text
    # no Message-ID: a deterministic one is synthesized and flagged
    assert d.payload["messages"][0]["message_id_synthesized"] is True
    assert d.payload["messages"][0]["message_id"].endswith("@synthesized.invalid")


def test_encoded_words_and_bodies_in_legacy_charsets() -> None:
    """RFC 2047 headers and a quoted-printable plain part in Latin-1, a base64 HTML part in cp1251."""
    html = "<html><body><p>Заседание <b>совета</b> перенесено.</p><p>Вторая&nbsp;строка</body></html>"
    raw = (
        b"From: =?windows-1252?q?Ren=E9e_O=92Brien?= <renee@example.org>\n"
        b"Date: Tue, 3 Mar 2026 10:00:00 +0100\n"
        b"Subject: =?iso-8859-1?q?R=E9union_du_conseil_?=\n =?iso-8859-15?b?pCBidWRnZXQ=?=\n"
        b"Message-ID: <legacy@example.org>\nMIME-Version: 1.0\n"
        b'Content-Type: multipart/mixed; boundary="outer"\n\n'
        b"--outer\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: quoted-printable\n\n"
        b"La r=E9union est d=E9plac=E9e =E0 jeudi, une tr=E8s longue ligne coup=\n=E9e en deux.\n"
        b"--outer\nContent-Type: text/plain; charset=koi8-r\nContent-Transfer-Encoding: base64\n\n"
        + base64.encodebytes("Приложение: повестка дня.".encode("koi8-r"))
        + b"--outer\nContent-Type: application/pdf; name=agenda.pdf\nContent-Disposition: attachment; filename=agenda.pdf\n"
        b"Content-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n--outer--\n"
    )
    m = parse_message(raw, "legacy.eml", None)
    assert (m.from_name, m.from_address) == ("Renée O’Brien", "renee@example.org")
    assert m.subject == "Réunion du conseil € budget"  # adjacent encoded words join without their space
    assert m.body == (
        "La réunion est déplacée à jeudi, une très longue ligne coupée en deux.\n\n"
        "Приложение: повестка дня.\n\n[attachment: agenda.pdf]"
    )
    html_only = (
        b"From: a@example.org\nDate: Tue, 3 Mar 2026 10:00:00 +0100\nMIME-Version: 1.0\n"
        b"Content-Type: text/html; charset=windows-1251\nContent-Transfer-Encoding: base64\n\n"
        + base64.encodebytes(html.encode("cp1251"))
    )
    assert parse_message(html_only, "h.eml", None).body == "Заседание совета перенесено.\n\nВторая строка"


@pytest.mark.parametrize("cte", ["quoted-printable", "base64", "8bit"])
@pytest.mark.parametrize("charset", ["utf-8", "iso-8859-1", "iso-8859-15", "windows-1252", "koi8-r", "shift_jis", "gb2312"])
def test_bodies_and_subjects_written_by_the_stdlib_read_back(charset: str, cte: str) -> None:
    """Whatever the charset and transfer encoding a sender's library chose, the text comes back."""
    sample = {
        "iso-8859-1": "Café crème, déjà vu",
        "iso-8859-15": "Café crème, déjà vu, 5 €",
        "koi8-r": "Отчёт о ремонте: всё готово",
        "shift_jis": "工事のお知らせ：完了しました",
        "gb2312": "维修通知：已经完成",
    }.get(charset, "Café crème — déjà vu, 5 €")
    body = "\n".join([sample, "a line long enough to be wrapped by quoted-printable, " * 3 + sample] * 3)
    msg = MimeMessage()
    msg["From"] = "sender@example.org"
    msg["Date"] = "Tue, 3 Mar 2026 10:00:00 +0000"
    msg["Subject"] = email.header.Header(sample, charset).encode()
    msg.set_content(body, charset=charset, cte=cte)
    m = parse_message(msg.as_bytes(), "g.eml", None)
    assert (m.subject, m.body) == (sample, body)


def test_undecodable_encoded_word_is_rejected() -> None:
    head = b"From: a@example.org\nDate: Tue, 3 Mar 2026 10:00:00 +0000\n"
    for subject in (b"=?utf-8?q?caf=E9?=", b"=?x-no-such-charset?q?caf=E9?="):
        with pytest.raises(Malformed, match="bad encoding in Subject header: an RFC 2047 encoded word"):
            parse_message(head + b"Subject: " + subject + b"\n\nbody\n", "s.eml", None)
    # an unknown charset over plain ASCII loses nothing: read as written
    ok = parse_message(head + b"Subject: =?x-no-such-charset?q?plain?=\n\nbody\n", "s.eml", None)
    assert ok.subject == "plain"


# -- duplicates -------------------------------------------------------------------------------


def test_duplicates_are_kept_once_and_reported_whatever_the_order() -> None:
    messages, _ = read_mbox(FIXTURES / "threads.mbox", FIXTURES)
    kept_a, rej_a = dedupe_messages(messages)
    kept_b, rej_b = dedupe_messages(list(reversed(messages)))
    assert sorted(m.fingerprint for m in kept_a) == sorted(m.fingerprint for m in kept_b)
    assert sorted((r.record_ref, r.reason) for r in rej_a) == sorted((r.record_ref, r.reason) for r in rej_b)
    reasons = sorted(r.reason for r in rej_a)
    assert reasons[0].startswith("duplicate Message-ID <b@example.org>: identical copy of the message kept from threads.mbox line 15")
    assert reasons[1].startswith("duplicate Message-ID <dup@example.org> with different content: kept the copy from threads.mbox line 143")


# -- threads --------------------------------------------------------------------------------


def test_thread_reconstruction_fork_missing_parent_cycle_and_subject() -> None:
    result = load_email_day(FIXTURES)
    threads = by_subject(result)
    assert sorted(threads) == ["Cycle", "Fork test: choosing a queue", "Holiday rota", "Status"]

    fork = threads["Fork test: choosing a queue"].payload
    tree = [(m["message_id"], m["parent_n"], m["threaded_by"]) for m in fork["messages"]]
    assert tree == [
        ("a@example.org", None, "root"),
        ("b@example.org", 1, "in-reply-to"),
        ("c@example.org", 2, "in-reply-to"),
        ("z@example.org", 3, "in-reply-to"),  # from reply.eml: threads span files
        ("d@example.org", 1, "in-reply-to"),  # the fork: a second reply to message 1
        ("e@example.org", 5, "in-reply-to"),
        ("l@example.org", 1, "subject"),  # no reply headers, same subject
    ]
    assert fork["thread_id"] == thread_id_for("a@example.org")
    assert fork["branch_count"] == 3
    text = threads["Fork test: choosing a queue"].text
    assert text.count("We need a queue for the export jobs.") == 1  # the shared prefix is rendered once

    rota = threads["Holiday rota"].payload
    assert rota["root_message_id"] == "rota@example.org" and rota["root_in_archive"] is False
    assert [m["missing_parent"] for m in rota["messages"]] == [True, True]
    # a thread without its root is a fragment: its id also names its first message
    assert threads["Holiday rota"].record_id == thread_id_for("rota@example.org", rota["messages"][0]["message_id"])
    assert threads["Holiday rota"].record_id != thread_id_for("rota@example.org")
    assert "Thread root not in this archive: <rota@example.org>" in threads["Holiday rota"].text

    cycle = threads["Cycle"].payload
    assert [m["message_id"] for m in cycle["messages"]] == ["i@example.org", "h@example.org"]
    assert cycle["broken_links"] == [{"message_id": "i@example.org", "ignored_parent": "h@example.org", "reason": "reply cycle"}]

    status = threads["Status"]
    assert "First status message." in status.text and "reused the same Message-ID" not in status.text
    assert len(result.rejects) == 5


def test_late_replies_landed_alone_do_not_take_the_whole_threads_id(tmp_path: Path) -> None:
    """Day 1 lands the fork thread; day 2 only a late reply to it: two documents, joined by the root."""
    day1 = by_subject(load_email_day(FIXTURES))["Fork test: choosing a queue"]
    late = tmp_path / "late.eml"
    late.write_text(
        "From: Grace Hopper <grace@example.org>\nTo: list@example.org\nSubject: Re: Fork test: choosing a queue\n"
        "Date: Mon, 09 Mar 2026 10:00:00 +0000\nMessage-ID: <late@example.org>\nIn-Reply-To: <e@example.org>\n"
        "References: <a@example.org> <d@example.org> <e@example.org>\n\nA late answer, a week on.\n"
    )
    (day2,) = load_email_day(tmp_path).documents
    assert day2.payload["root_in_archive"] is False and day2.payload["root_message_id"] == "a@example.org"
    assert day2.doc_id != day1.doc_id  # so "latest partition wins" cannot hide day 1's thread
    assert day2.record_id == thread_id_for("a@example.org", "late@example.org")
    assert day1.record_id == thread_id_for("a@example.org")  # a thread with its root keeps the root's id


def test_threads_and_ids_do_not_depend_on_file_or_message_order(tmp_path: Path) -> None:
    messages, _ = read_mbox(FIXTURES / "threads.mbox", FIXTURES)
    kept, _ = dedupe_messages(messages)
    a = build_threads(kept)
    b = build_threads(list(reversed(kept)))
    assert [(t.thread_id, [m.msg.message_id for m in t.messages]) for t in a] == [
        (t.thread_id, [m.msg.message_id for m in t.messages]) for t in b
    ]
    # renaming files changes nothing but where messages came from
    shutil.copy(FIXTURES / "threads.mbox", tmp_path / "zz.mbox")
    shutil.copy(FIXTURES / "reply.eml", tmp_path / "aa.eml")
    one = {d.record_id: d.text for d in load_email_day(FIXTURES).documents}
    two = {d.record_id: d.text for d in load_email_day(tmp_path).documents}
    assert one == two


def test_quotes_of_earlier_messages_become_references() -> None:
    fork = by_subject(load_email_day(FIXTURES))["Fork test: choosing a queue"]
    text = fork.text
    # "Ada Lovelace wrote:" + 2 quoted lines: the attribution folds into the reference, which names her
    assert "[quoting Ada Lovelace, 2026-03-02, message 1: 3 lines]" in text
    assert "[quoting messages 2, 1: 6 lines]" in text  # nested quote split by author, one line
    assert "> We need a queue" not in text and "wrote:" not in text
    quotes = fork.payload["messages"][2]["quotes"]
    assert [(q["n"], q["lines"]) for q in quotes] == [(2, 3), (1, 3)]


def test_dedup_quotes_keeps_what_it_cannot_attribute() -> None:
    body = "> something nobody in the thread wrote, quoted from elsewhere\n\nreply"
    assert dedup_quotes(body, []) == (body, [])


def test_sample_landing_days() -> None:
    day24 = load_email_day(SAMPLE / "2026-11-24")
    assert day24.rejects == []
    subjects = sorted(d.title for d in day24.documents)
    assert subjects == ["Budget for the export servers", "Moving the portal to the new catalog", "Office hours this Thursday"]
    portal = by_subject(day24)["Moving the portal to the new catalog"]
    assert portal.source_file == "late-reply.eml, open-data-list-2026-11.mbox"
    assert portal.payload["branch_count"] == 2
    day25 = load_email_day(SAMPLE / "2026-11-25")
    assert sorted(r.reason.split(":")[0] for r in day25.rejects) == [
        "bad encoding", "duplicate Message-ID <20261125082000.export-2@riverton.example>", "missing From header",
    ]
    assert "José Álvarez" in day25.documents[0].text
    day26 = load_email_day(SAMPLE / "2026-11-26")
    assert len(day26.documents) == 1 and len(day26.rejects) == 2
    assert "bulk export" in day26.documents[0].text  # the HTML-only reply, as text


@needs_corpus(CORPUS)
def test_pipermail_corpus() -> None:
    result = load_email_day(CORPUS)
    assert result.rejects == []
    assert sum(d.payload["message_count"] for d in result.documents) == 281
