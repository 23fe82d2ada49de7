"""The ``civic_intelligence`` landing format: meeting records (JSON Lines) and transcripts.

A landing day may hold

* ``*.jsonl`` files, one meeting record per line, validated against
  :data:`RECORD_SCHEMA` and its nested schemas (agenda items, turns, conditions,
  contingencies) with pandera; an invalid record becomes one reject naming every bad
  field, the valid ones still land;
* ``*.txt`` files, each a diarized council transcript (see
  :mod:`.council_transcript`); the file name (without ``.txt``) is the record id.

A record's canonical text is :func:`render_record` of it: a plain-text rendering of
its fields, and the :class:`~codex_pipeline.core.documents.Block` of every item
header, turn, condition and contingency in it. A transcript's canonical text is the
file text itself, its blocks the parsed turns and the inferred agenda items (see
:func:`.council_transcript.transcript_blocks`). The blocks go on the document and
into ``raw.blocks``, so the chunker cuts at these offsets and never parses again.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codex_pipeline.core.documents import Block, LoadResult, Reject, SourceDocument
from codex_pipeline.core.ids import make_doc_id
from codex_pipeline.sources.council_transcript import infer_agenda_items, parse_transcript, transcript_blocks
from codex_pipeline.sources.documents import read_file, text_document
from codex_pipeline.sources.files import landing_files, read_text
from codex_pipeline.sources.meetings import reader as meetings
from codex_pipeline.sources.meetings.speech import transcript_style
from codex_pipeline.sources.records import Field, RawRecord, RecordSchema, dedupe, read_json_lines
from codex_pipeline.sources.structured import HTTP_URL_RULE

DATASET = "civic_intelligence"
TRANSCRIPT_SUFFIX = ".txt"
RECORD_SUFFIX = ".jsonl"
DOCUMENT_SUFFIXES = (".pdf", ".docx")
DIARIZED_LABEL = re.compile(r"^Start:[ \t]*\d{1,2}:\d{2}:\d{2}", re.M)  # a diarized turn's time line

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,119}$")
_ITEM_NUMBER = re.compile(r"^[A-Za-z0-9]{1,8}(?:-[A-Za-z0-9]{1,8}){0,2}$")
_NODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
_TAG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_CLOCK = re.compile(r"^\d{1,2}:\d{2}:\d{2}(?:\.\d{1,6})?$")

MEETING_TYPES = ("regular", "special", "work_session", "public_hearing", "committee")
CONDITION_KINDS = ("condition", "blocker")
CONTINGENCY_STATUSES = ("open", "met", "waived", "failed")


def _nonblank(v: str) -> bool:
    return bool(v.strip())


def _one_line(v: str) -> bool:
    return bool(v.strip()) and "\n" not in v and "\r" not in v


def _unique_numbers(items: list[dict]) -> bool:
    numbers = [str(i.get("number")) for i in items]
    return bool(items) and len(numbers) == len(set(numbers))


def _is_dag(nodes: list[dict]) -> bool:
    """Node ids unique, every ``depends_on`` names a node of the same item, no cycle."""
    ids = [n.get("id") for n in nodes]
    if len(ids) != len(set(ids)):
        return False
    deps = {n.get("id"): list(n.get("depends_on") or []) for n in nodes}
    if any(not isinstance(d, str) or d not in deps or d == nid for nid, ds in deps.items() for d in ds):
        return False
    state: dict[Any, int] = {}  # 1 = on the stack, 2 = done

    def acyclic(nid: Any) -> bool:
        stack = [(nid, iter(deps[nid]))]
        state[nid] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return False
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(deps[nxt])))
        return True

    return all(state.get(n) == 2 or acyclic(n) for n in deps)


RECORD_SCHEMA = RecordSchema(
    DATASET,
    "record_id",
    (
        Field("record_id", "string", True,
              "Stable id of the meeting record, `[A-Za-z0-9][A-Za-z0-9._-]*` (≤ 120 chars); "
              "`doc_id = urn:aprs:civic_intelligence:{record_id}`.",
              ("id characters [A-Za-z0-9._-], at most 120", lambda v: bool(_ID.match(v)))),
        Field("body", "string", True, "Governing body that met, e.g. `Riverton City Council`.",
              ("single line", _one_line)),
        Field("meeting_date", "date", True, "Meeting date, ISO `YYYY-MM-DD`."),
        Field("meeting_type", "string", True, f"One of {', '.join(f'`{t}`' for t in MEETING_TYPES)}.",
              ("one of " + "|".join(MEETING_TYPES), lambda v: v in MEETING_TYPES)),
        Field("title", "string", False, "Meeting title; defaults to `{body} {meeting_type} meeting, {date}`.",
              ("single line", _one_line)),
        Field("source_url", "string", False, "Where the agenda / minutes / video were published (http or https).",
              HTTP_URL_RULE),
        Field("agenda_items", "list[object]", True,
              "The agenda items in agenda order, each an object of the *agenda item* table below; "
              "at least one, item numbers unique in the record.",
              ("at least one item, numbers unique", _unique_numbers)),
    ),
)

ITEM_SCHEMA = RecordSchema(
    f"{DATASET}.agenda_item",
    "number",
    (
        Field("number", "string", True,
              "Item number as printed on the agenda (`4`, `C2`, `7b`, `F-3`); becomes `item.{number}` in "
              "section ids, so letters, digits and inner hyphens only.",
              ("agenda number [A-Za-z0-9] with inner hyphens", lambda v: bool(_ITEM_NUMBER.match(v)))),
        Field("title", "string", True, "Item title as on the agenda.", ("single line", _one_line)),
        Field("summary", "string", True, "What the item is and what happened; the text of the `agenda_item` chunk.",
              ("non-blank", _nonblank)),
        Field("action", "string", False, "Outcome, e.g. `Approved 5-2`, `Tabled to 2026-12-08`.",
              ("single line", _one_line)),
        Field("turns", "list[object]", False, "Speaker turns in the order spoken (*turn* table)."),
        Field("conditions", "list[object]", False,
              "Conditions of approval and blocker tags attached to the item (*condition* table)."),
        Field("contingencies", "list[object]", False,
              "Contingency DAG of the item (*contingency* table): node ids unique, `depends_on` names nodes "
              "of the same item, no cycles.",
              ("contingency DAG: unique ids, known dependencies, no cycle", _is_dag)),
    ),
)

TURN_SCHEMA = RecordSchema(
    f"{DATASET}.turn",
    "speaker",
    (
        Field("speaker", "string", True, "Who spoke, as the minutes name them.", ("single line", _one_line)),
        Field("role", "string", False, "Their role, e.g. `Mayor`, `Planning staff`, `Resident`.",
              ("single line", _one_line)),
        Field("text", "string", True, "What they said (paragraphs separated by blank lines).",
              ("non-blank", _nonblank)),
        Field("start", "string", False, "Offset into the meeting video, `HH:MM:SS[.fff]`.",
              ("clock time HH:MM:SS[.fff]", lambda v: bool(_CLOCK.match(v)))),
        Field("end", "string", False, "End offset, `HH:MM:SS[.fff]`.", ("clock time HH:MM:SS[.fff]", lambda v: bool(_CLOCK.match(v)))),
    ),
)

CONDITION_SCHEMA = RecordSchema(
    f"{DATASET}.condition",
    "text",
    (
        Field("kind", "string", True,
              "`condition` (a condition of approval) or `blocker` (something that stops the item from proceeding).",
              ("one of " + "|".join(CONDITION_KINDS), lambda v: v in CONDITION_KINDS)),
        Field("tag", "string", False, "Machine tag, lower-case `[a-z0-9_-]`, e.g. `traffic-study-pending`.",
              ("tag [a-z0-9_-]", lambda v: bool(_TAG.match(v)))),
        Field("text", "string", True, "The condition or blocker as worded in the record.", ("non-blank", _nonblank)),
    ),
)

CONTINGENCY_SCHEMA = RecordSchema(
    f"{DATASET}.contingency",
    "id",
    (
        Field("id", "string", True, "Node id, unique within the item, `[A-Za-z0-9_-]`; becomes "
              "`item.{n}.contingency.{id}`.", ("node id [A-Za-z0-9_-]", lambda v: bool(_NODE_ID.match(v)))),
        Field("text", "string", True, "What must happen.", ("non-blank", _nonblank)),
        Field("depends_on", "list[string]", False, "Ids of the nodes that must resolve first (edges of the DAG)."),
        Field("status", "string", False, f"One of {', '.join(f'`{s}`' for s in CONTINGENCY_STATUSES)}.",
              ("one of " + "|".join(CONTINGENCY_STATUSES), lambda v: v in CONTINGENCY_STATUSES)),
    ),
)

NESTED: tuple[tuple[str, RecordSchema], ...] = (
    ("turns", TURN_SCHEMA),
    ("conditions", CONDITION_SCHEMA),
    ("contingencies", CONTINGENCY_SCHEMA),
)


# ------------------------------------------------------------------ validation


def _dicts(v: Any) -> list[tuple[int, dict]]:
    return [(i, x) for i, x in enumerate(v) if isinstance(x, dict)] if isinstance(v, list) else []


def validate_records(records: list[RawRecord]) -> tuple[list[RawRecord], list[Reject]]:
    """Valid records in input order, and one reject per invalid record.

    The record level and every nested level (items, turns, conditions, contingencies)
    are pandera-validated in one batch per level over the whole day; a record is
    rejected when anything in it fails, and the reason lists every problem with its
    path (``agenda_items[1].turns[0]: field 'speaker' fails …``).
    """
    problems: dict[int, list[str]] = {}
    items: list[RawRecord] = []
    owner: list[int] = []
    for i, r in enumerate(records):
        for j, item in _dicts(r.data.get("agenda_items")):
            items.append(RawRecord(r.source_file, f"agenda_items[{j}]", item))
            owner.append(i)
    _collect(ITEM_SCHEMA, items, owner, problems)
    for key, schema in NESTED:
        subs: list[RawRecord] = []
        sub_owner: list[int] = []
        for owner_item, i in zip(items, owner):
            for k, sub in _dicts(owner_item.data.get(key)):
                subs.append(RawRecord(owner_item.source_file, f"{owner_item.ref}.{key}[{k}]", sub))
                sub_owner.append(i)
        _collect(schema, subs, sub_owner, problems)

    valid, top_rejects = RECORD_SCHEMA.validate(records)
    valid_ids = {id(r) for r in valid}
    rejected_idx = [i for i, r in enumerate(records) if id(r) not in valid_ids]
    reasons = {i: rej for i, rej in zip(rejected_idx, top_rejects)}
    out_valid, out_rejects = [], []
    for i, r in enumerate(records):
        nested = problems.get(i, [])
        if i in reasons:
            rej = reasons[i]
            reason = "; ".join([rej.reason, *nested])
            out_rejects.append(Reject(rej.source_file, reason, rej.record_ref, rej.excerpt))
        elif nested:
            rid = r.data.get("record_id")
            ref = r.ref + (f", record_id={rid!r}" if isinstance(rid, str) else "")
            out_rejects.append(Reject(r.source_file, "; ".join(nested), ref, _excerpt(r.data)))
        else:
            out_valid.append(r)
    return out_valid, out_rejects


_PROBLEM_SPLIT = re.compile(r"; (?=field '|unknown field\(s\) )")  # how RecordSchema.validate joins problems


def _collect(schema: RecordSchema, subs: list[RawRecord], owner: list[int], problems: dict[int, list[str]]) -> None:
    valid, rejects = schema.validate(subs)
    valid_ids = {id(s) for s in valid}
    bad = [k for k, s in enumerate(subs) if id(s) not in valid_ids]
    for k, rej in zip(bad, rejects):
        for problem in _PROBLEM_SPLIT.split(rej.reason):  # one path prefix per problem
            problems.setdefault(owner[k], []).append(f"{rej.record_ref}: {problem}")


def _excerpt(data: dict) -> str:
    s = json.dumps(data, ensure_ascii=False)
    return s if len(s) <= 300 else s[:299] + "…"


# ------------------------------------------------------------------ canonical text


@dataclass
class _Writer:
    parts: list[str] = field(default_factory=list)
    pos: int = 0

    def add(self, s: str) -> tuple[int, int]:
        start = self.pos
        self.parts.append(s)
        self.pos += len(s)
        return start, self.pos


def record_title(rec: dict[str, Any]) -> str:
    """The record's ``title``, or ``"{body} {meeting type} meeting, {meeting_date}"`` when it has none."""
    title = (rec.get("title") or "").strip()
    return title or f"{rec['body'].strip()} {rec['meeting_type'].replace('_', ' ')} meeting, {rec['meeting_date']}"


def render_record(rec: dict[str, Any]) -> tuple[str, tuple[Block, ...]]:
    """Canonical text of a validated record and the block of every chunkable part.

    Layout (values are stripped of surrounding whitespace; optional lines only when set)::

        {title}
        Body: {body}
        Date: {meeting_date}
        Type: {meeting_type}
        Record: {record_id}
        Source: {source_url}

        Item {number}: {title}                 ┐ agenda_item block
        Summary: {summary}                     │
        Action: {action}                       ┘
        Discussion:
        {speaker} ({role}): {text}             ← one turn block per line
        Conditions:
        Condition {k}: {text}                  ← condition block: kind condition, or
        Blocker {k} [{tag}]: {text}            ← kind blocker (tag optional, also on conditions)
        Contingencies:
        Contingency {id} [{status}]: {text} Depends on: {ids, or "nothing (start node)"}.

    Blocks, in text order (an item's turns, conditions and contingencies follow its
    ``agenda_item`` block):

    * ``agenda_item``: the item header; key the item number; meta ``title``.
    * ``turn``: the whole line; key the speaker; meta ``text`` (where the spoken text
      starts, relative to the block's start) and ``start`` / ``end`` (video offsets)
      when given.
    * ``condition``: the line; key its 1-based position; meta ``kind`` and ``tag``.
    * ``contingency``: the line; key the node id; meta ``depends_on``.
    """
    w = _Writer()
    w.add(record_title(rec) + "\n")
    w.add(f"Body: {rec['body'].strip()}\nDate: {rec['meeting_date']}\nType: {rec['meeting_type']}\n")
    w.add(f"Record: {rec['record_id']}\n")
    if rec.get("source_url"):
        w.add(f"Source: {rec['source_url'].strip()}\n")
    blocks: list[Block] = []
    for item in rec["agenda_items"]:
        w.add("\n")
        number = str(item["number"])
        head = f"Item {number}: {item['title'].strip()}\nSummary: {item['summary'].strip()}"
        if item.get("action"):
            head += f"\nAction: {item['action'].strip()}"
        blocks.append(Block("agenda_item", *w.add(head), number, {"title": item["title"].strip()}))
        w.add("\n")
        if item.get("turns"):
            w.add("Discussion:\n")
            for t in item["turns"]:
                who = t["speaker"].strip() + (f" ({t['role'].strip()})" if t.get("role") else "")
                s0, _ = w.add(f"{who}: ")
                ts, te = w.add(t["text"].strip())
                w.add("\n")
                meta: dict[str, Any] = {"text": ts - s0} | {k: t[k] for k in ("start", "end") if t.get(k)}
                blocks.append(Block("turn", s0, te, t["speaker"].strip(), meta))
        if item.get("conditions"):
            w.add("Conditions:\n")
            for k, c in enumerate(item["conditions"], 1):
                label = "Blocker" if c["kind"] == "blocker" else "Condition"
                tag = f" [{c['tag']}]" if c.get("tag") else ""
                span = w.add(f"{label} {k}{tag}: {c['text'].strip()}")
                blocks.append(Block("condition", *span, str(k), {"kind": c["kind"]} | ({"tag": c["tag"]} if c.get("tag") else {})))
                w.add("\n")
        if item.get("contingencies"):
            w.add("Contingencies:\n")
            for n in item["contingencies"]:
                status = f" [{n['status']}]" if n.get("status") else ""
                deps = list(n.get("depends_on") or [])
                line = f"Contingency {n['id']}{status}: {n['text'].strip()} Depends on: {', '.join(deps) or 'nothing (start node)'}."
                blocks.append(Block("contingency", *w.add(line), n["id"], {"depends_on": deps}))
                w.add("\n")
    return "".join(w.parts), tuple(blocks)


# ------------------------------------------------------------------ loading


def record_document(r: RawRecord) -> SourceDocument:
    """A validated meeting record as one document: text and blocks from :func:`render_record`, the record as payload."""
    text, blocks = render_record(r.data)
    return SourceDocument(
        doc_id=make_doc_id(DATASET, r.data["record_id"]),
        record_id=r.data["record_id"],
        text=text,
        source_file=r.source_file,
        title=record_title(r.data),
        payload=r.data,
        blocks=blocks,
    )


def _bad_record_id(path: Path, rel: str) -> Reject | None:
    if _ID.match(path.stem):
        return None
    return Reject(rel, f"file name {path.name!r} is not a record id: rename it to [A-Za-z0-9][A-Za-z0-9._-]* "
                       "(at most 120 chars) plus its suffix")


def diarized_document(rel: str, record_id: str, text: str) -> tuple[SourceDocument | None, list[Reject]]:
    """A diarized transcript's text as one document, and its rejects.

    No parsable block stops the file. Malformed stretches between good blocks do not: each
    is one reject (by line number) and is left out of the document's turn blocks, so the
    chunker skips it.
    """
    parsed = parse_transcript(text)
    if not parsed.turns:
        return None, [Reject(rel, "no speaker turns found: expected blocks of 'Name:', 'Start:', 'End:', "
                                  "'Duration:', 'Text:' lines separated by lines of dashes", excerpt=text[:300])]
    inference = infer_agenda_items(text, parsed.turns)
    doc = SourceDocument(
        doc_id=make_doc_id(DATASET, record_id),
        record_id=record_id,
        text=text,
        source_file=rel,
        title=parsed.title or record_id,
        payload={"transcript": {"title": parsed.title, "turns": len(parsed.turns),
                                "malformed_blocks": len(parsed.malformed), "chair": inference.chair,
                                "chair_basis": inference.chair_basis},
                 "meeting": {"kind": "transcript", "style": "diarized"}},
        blocks=transcript_blocks(parsed, inference),
    )
    rejects = [
        Reject(rel, "malformed transcript block skipped (expected 'Name:', 'Start:', 'End:', 'Duration:', "
                    "'Text:' lines)", f"line {line}", excerpt)
        for line, excerpt in parsed.malformed
    ]
    return doc, rejects


def _text_record(path: Path, day_dir: Path, rel: str, rejects: list[Reject],
                 transcripts: list[tuple[str, str, str]]) -> SourceDocument | None:
    """A ``.txt`` file: a diarized transcript, a transcript without speakers (kept for after the agendas), or
    an agenda or minutes as plain text."""
    text = read_text(path, day_dir)
    if isinstance(text, Reject):
        rejects.append(text)
        return None
    if DIARIZED_LABEL.search(text[:4096]):
        doc, bad = diarized_document(rel, path.stem, text)
        rejects.extend(bad)
        return doc
    if transcript_style(text) is not None:
        transcripts.append((rel, path.stem, text))
        return None
    got = text_document(rel, text, "text")
    if isinstance(got, Reject):
        rejects.append(got)
        return None
    return meetings.record_document(dataclasses.replace(got, record_id=path.stem), path.name, rejects)


def load_civic_day(day_dir: Path) -> LoadResult:
    """Every record of one landing day: ``.jsonl`` meeting records, transcripts, agendas and minutes.

    ``.txt`` files are diarized transcripts, transcripts without speakers, or agendas and
    minutes as text; ``.pdf`` and ``.docx`` files are agendas and minutes. Transcripts without
    speakers are read last, so they align with the agenda of their meeting landed the same day.
    """
    result = LoadResult()
    raw: list[RawRecord] = []
    docs: list[SourceDocument] = []
    transcripts: list[tuple[str, str, str]] = []
    for path in landing_files(day_dir):
        suffix = path.suffix.lower()
        rel = path.relative_to(day_dir).as_posix()
        if suffix == RECORD_SUFFIX:
            got, bad = read_json_lines(path, day_dir)
            raw.extend(got)
            result.rejects.extend(bad)
            continue
        if suffix not in (TRANSCRIPT_SUFFIX, *DOCUMENT_SUFFIXES):
            result.rejects.append(Reject(rel, f"unsupported file type {suffix or '(none)'!r}: civic_intelligence takes "
                                              ".jsonl records, .txt transcripts, agendas and minutes, and .pdf / .docx "
                                              "agendas and minutes"))
            continue
        bad_name = _bad_record_id(path, rel)
        if bad_name is not None:
            result.rejects.append(bad_name)
            continue
        if suffix == TRANSCRIPT_SUFFIX:
            doc = _text_record(path, day_dir, rel, result.rejects, transcripts)
        else:
            read = read_file(path, day_dir, result.rejects)
            doc = None if read is None else meetings.record_document(
                dataclasses.replace(read, record_id=path.stem), path.name, result.rejects)
        if doc is not None:
            docs.append(doc)
    valid, bad = validate_records(raw)
    result.rejects.extend(bad)
    valid, dupes = dedupe(valid, "record_id")
    result.rejects.extend(dupes)
    result.documents.extend(record_document(r) for r in valid)
    records = [d for d in docs if (d.payload or {}).get("meeting", {}).get("kind") in ("agenda", "minutes")]
    docs.extend(meetings.transcript_document(rel, rid, text, records) for rel, rid, text in transcripts)
    result.documents.extend(_unique(docs, {d.record_id for d in result.documents}, result.rejects))
    return result


def _unique(docs: Iterable[SourceDocument], taken: set[str], rejects: list[Reject]) -> list[SourceDocument]:
    out = []
    for d in docs:
        if d.record_id in taken:
            rejects.append(Reject(d.source_file, f"duplicate record_id {d.record_id!r}: a record or transcript "
                                                 "with this id already landed this day", d.record_id))
            continue
        taken.add(d.record_id)
        out.append(d)
    return out
