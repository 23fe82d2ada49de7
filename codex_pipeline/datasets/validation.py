"""Seed 003's "60-second validator": are a dataset's chunk addresses auditable?

On a sample of chunks (20 by default) of published partitions:

* ``unique_ids`` — no ``chunk_id`` on two rows (checked on the whole partition, it is cheap);
* ``locator_order`` — every locator parses, names its document, and within each section /
  page of a sampled chunk, sorting by locator gives the ``seq_index`` (reading) order; so does
  sorting a sampled document's chunks by (section path as numbers, page, block);
* ``offsets`` — ``canonical_text[start:end]`` reproduces a verbatim chunk; every span of a
  composed chunk is in the text and its slice appears in the chunk, in order;
* ``stable_ids`` — re-chunking the sampled documents' raw records in memory gives the same
  ids (and, when the partition was built by today's ``chunking_version``, the same seq,
  locators and texts).

Citation checks against a gold file need retrieval and the source files, so they live with
the ``codex validate`` command; this module stays a pure function of tables.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from codex_pipeline.core.documents import SourceDocument
from codex_pipeline.core.ids import locator_uid, parse_locator
from codex_pipeline.core.locators import section_sort_key
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.warehouse.storage import Warehouse

CHECKS = ("unique_ids", "locator_order", "offsets", "stable_ids")
DEFAULT_SAMPLE = 20
MAX_PROBLEMS_PER_CHECK = 20  # a report names the first ones; the counts say how many
_COLUMNS = ("chunk_id", "doc_id", "section_id", "chunk_text", "seq_index", "evidence_anchor", "locator",
            "content_hash", "chunking_version")


@dataclass(frozen=True)
class Problem:
    """One failure of a check, with enough of ``where`` to find the row."""

    check: str
    where: str  # dataset, day, document, chunk: enough to find the row
    message: str

    def line(self) -> str:
        """``[check] where: message``."""
        return f"[{self.check}] {self.where}: {self.message}"


@dataclass
class ValidationReport:
    """A dataset's checks over the days validated: counts per check, the first problems of each, and notes."""

    dataset: str
    days: list[dt.date] = field(default_factory=list)
    sampled: int = 0
    checked: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CHECKS, 0))
    failures: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CHECKS, 0))
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when no check failed (also when nothing was checked: see ``notes``)."""
        return not any(self.failures.values())

    @property
    def failed_checks(self) -> list[str]:
        """The checks with at least one failure."""
        return [c for c in self.failures if self.failures[c]]

    def fail(self, check: str, where: str, message: str) -> None:
        """Count a failure; its :class:`Problem` is kept while the check has fewer than MAX_PROBLEMS_PER_CHECK."""
        self.failures[check] = self.failures.get(check, 0) + 1
        if sum(p.check == check for p in self.problems) < MAX_PROBLEMS_PER_CHECK:
            self.problems.append(Problem(check, where, message))

    def merge(self, other: ValidationReport) -> None:
        """Add ``other``'s days, counts, problems and notes to this report (a partition's into the dataset's)."""
        self.days += other.days
        self.sampled += other.sampled
        for c, n in other.checked.items():
            self.checked[c] = self.checked.get(c, 0) + n
        for c, n in other.failures.items():
            self.failures[c] = self.failures.get(c, 0) + n
        self.problems += other.problems
        self.notes += other.notes

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (what ``codex validate --json`` prints per dataset)."""
        return {
            "dataset": self.dataset, "passed": self.passed, "days": [d.isoformat() for d in sorted(self.days)],
            "sampled_chunks": self.sampled,
            "checks": {c: {"checked": self.checked.get(c, 0), "failed": self.failures.get(c, 0)} for c in self.checked},
            "problems": [{"check": p.check, "where": p.where, "message": p.message} for p in self.problems],
            "notes": self.notes,
        }

    def lines(self) -> list[str]:
        """The report for a terminal: the verdict, one line per check (passed / checked), problems, notes."""
        verdict = "PASS" if self.passed else "FAIL"
        days = ", ".join(d.isoformat() for d in sorted(self.days)) or "no published partition"
        out = [f"{self.dataset}: {verdict} ({self.sampled} sampled chunks; {days})"]
        for c in self.checked:
            mark = "ok  " if not self.failures.get(c) else "FAIL"
            out.append(f"  {mark} {c:15s} {self.checked[c] - self.failures.get(c, 0)}/{self.checked[c]}")
        out += [f"  {p.line()}" for p in self.problems]
        out += [f"  note: {n}" for n in self.notes]
        return out


def sample_rows(chunk_ids: Sequence[str], n: int, seed: int = 0) -> list[int]:
    """``n`` row positions chosen by a hash of (seed, chunk id): the same sample on every run."""
    keys = sorted(range(len(chunk_ids)), key=lambda i: hashlib.sha1(f"{seed}:{chunk_ids[i]}".encode()).digest())
    return sorted(keys[: max(n, 0)])


def _spans(anchor: str) -> list[tuple[int, int]] | None:
    try:
        a = json.loads(anchor)
        spans = a.get("spans") or [a["char_span"]]
        return [(int(s), int(e)) for s, e in spans]
    except (TypeError, ValueError, KeyError):
        return None


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def validate_partition(
    spec: DatasetSpec,
    day: dt.date,
    chunks: pa.Table,
    documents: Sequence[SourceDocument],
    *,
    sample: int = DEFAULT_SAMPLE,
    seed: int = 0,
) -> ValidationReport:
    """The four checks on one partition's chunk table and the documents of its raw table."""
    report = ValidationReport(spec.name, [day])
    where_day = f"{spec.name} {day.isoformat()}"
    ids = chunks.column("chunk_id").to_pylist()
    _unique(report, where_day, ids, chunks)
    chosen = sample_rows(ids, sample, seed)
    report.sampled = len(chosen)
    # only the sampled chunks' documents become Python rows: the check stays cheap on a big partition
    doc_ids = chunks.column("doc_id").take(pa.array(chosen, type=pa.int64())) if chosen else pa.array([], pa.string())
    mask = pc.is_in(chunks.column("doc_id"), value_set=pa.array(doc_ids.to_pylist(), type=pa.string()))
    positions = pc.indices_nonzero(mask).to_pylist()
    rows = chunks.filter(mask).select(list(_COLUMNS)).to_pylist()
    where_in = {p: k for k, p in enumerate(positions)}
    picked = [where_in[i] for i in chosen]
    docs = {d.doc_id: d for d in documents}
    _locator_order(report, where_day, rows, picked, docs)
    _offsets(report, where_day, [rows[i] for i in picked], docs)
    _stable(report, spec, day, rows, picked, docs)
    return report


def _unique(report: ValidationReport, where: str, ids: list[str], chunks: pa.Table) -> None:
    report.checked["unique_ids"] += len(ids)
    counts = pc.value_counts(chunks.column("chunk_id"))
    dup = counts.filter(pc.greater(counts.field("counts"), 1))
    for item in dup.to_pylist():
        mask = pc.equal(chunks.column("chunk_id"), item["values"])
        sections = sorted(set(chunks.filter(mask).column("section_id").to_pylist()))
        report.fail("unique_ids", f"{where} chunk {item['values']}",
                    f"on {item['counts']} rows (sections {', '.join(sections)}): re-chunk the partition; "
                    "two rows must never share an id")


def _locator_order(report: ValidationReport, where: str, rows: list[dict[str, Any]], picked: list[int],
                   docs: Mapping[str, SourceDocument]) -> None:
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_doc.setdefault(r["doc_id"], []).append(r)
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    sampled_docs: list[str] = []
    for i in picked:
        r = rows[i]
        report.checked["locator_order"] += 1
        parts = parse_locator(r["locator"])
        doc = docs.get(r["doc_id"])
        loc_where = f"{where} chunk {r['chunk_id']} (doc {r['doc_id']}, section {r['section_id']})"
        if parts is None:
            report.fail("locator_order", loc_where, f"locator {r['locator']!r} is not doc_uid|r=rev8|s=path|p=page3|b=block3")
            continue
        if doc is not None and parts["uid"] != locator_uid(doc.record_id):
            report.fail("locator_order", loc_where, f"locator names document {parts['uid']!r}, the row's record is {doc.record_id!r}")
        if r["doc_id"] not in sampled_docs:
            sampled_docs.append(r["doc_id"])
        key = (r["doc_id"], parts["section"], parts["page"])
        if key not in groups:
            groups[key] = [x for x in by_doc[r["doc_id"]] if _section_page(x["locator"]) == key[1:]]
    for (doc_id, section, page), members in groups.items():
        by_locator = [m["seq_index"] for m in sorted(members, key=lambda m: _block(m["locator"]))]
        if by_locator != sorted(by_locator):
            report.fail("locator_order", f"{where} doc {doc_id} section {section} page {page}",
                        f"sorting by locator gives seq_index {by_locator}, not reading order {sorted(by_locator)}")
    for doc_id in sampled_docs:
        members = by_doc[doc_id]
        keyed = [(_doc_order(m["locator"]), m["seq_index"]) for m in members]
        if any(k is None for k, _ in keyed):
            continue  # a malformed locator is reported above
        seqs = [s for _, s in sorted(keyed, key=lambda x: x[0] or ())]
        if seqs != sorted(seqs):
            first = next(k for k, (a, b) in enumerate(zip(seqs, sorted(seqs))) if a != b)
            report.fail("locator_order", f"{where} doc {doc_id}",
                        f"sorting the document's locators puts seq_index {seqs[first]} where {sorted(seqs)[first]} "
                        "belongs: locators and seq_index disagree on reading order")


def _section_page(locator: str) -> tuple[str, str] | None:
    p = parse_locator(locator)
    return (p["section"], p["page"]) if p else None


def _block(locator: str) -> int:
    p = parse_locator(locator)
    return int(p["block"]) if p else -1


def _doc_order(locator: str) -> tuple[Any, ...] | None:
    p = parse_locator(locator)
    return (section_sort_key(p["section"]), int(p["page"]), int(p["block"])) if p else None


def _offsets(report: ValidationReport, where: str, rows: list[dict[str, Any]], docs: Mapping[str, SourceDocument]) -> None:
    for r in rows:
        report.checked["offsets"] += 1
        at = f"{where} chunk {r['chunk_id']} (doc {r['doc_id']}, section {r['section_id']})"
        doc = docs.get(r["doc_id"])
        if doc is None:
            report.fail("offsets", at, "no raw record for this document in the partition: re-materialize raw and chunks")
            continue
        spans = _spans(r["evidence_anchor"])
        if spans is None:
            report.fail("offsets", at, f"evidence_anchor {_short(r['evidence_anchor'])} has no char_span")
            continue
        text, chunk = doc.text, r["chunk_text"]
        bad = next(((s, e) for s, e in spans if not 0 <= s <= e <= len(text)), None)
        if bad:
            report.fail("offsets", at, f"span {list(bad)} is outside the canonical text (length {len(text)})")
        elif len(spans) == 1:
            s, e = spans[0]
            if text[s:e] != chunk:
                report.fail("offsets", at, f"canonical_text[{s}:{e}] = {_short(text[s:e])} but chunk_text = {_short(chunk)}")
        else:
            pos = 0
            for s, e in spans:
                found = chunk.find(text[s:e].strip(), pos)
                if found < 0:
                    report.fail("offsets", at, f"span [{s}, {e}] ({_short(text[s:e])}) is not in the composed chunk_text")
                    break
                pos = found


def _stable(report: ValidationReport, spec: DatasetSpec, day: dt.date, rows: list[dict[str, Any]], picked: list[int],
            docs: Mapping[str, SourceDocument]) -> None:
    wanted = list(dict.fromkeys(rows[i]["doc_id"] for i in picked))
    present = [docs[d] for d in wanted if d in docs]
    if not present:
        return
    again = steps.chunk(spec, day, present).table.select(["chunk_id", "doc_id", "seq_index", "locator", "content_hash"])
    fresh: dict[str, list[tuple[Any, ...]]] = {}
    for r in again.to_pylist():
        fresh.setdefault(r["doc_id"], []).append((r["chunk_id"], r["seq_index"], r["locator"], r["content_hash"]))
    stored: dict[str, list[tuple[Any, ...]]] = {}
    versions: set[str] = set()
    for r in rows:
        if r["doc_id"] in fresh or r["doc_id"] in wanted:
            stored.setdefault(r["doc_id"], []).append((r["chunk_id"], r["seq_index"], r["locator"], r["content_hash"]))
            versions.add(r["chunking_version"])
    current = versions <= {spec.chunking_version}
    if not current:
        report.notes.append(f"{spec.name} {day}: built with chunking_version {', '.join(sorted(versions))}, today's is "
                            f"{spec.chunking_version}: only ids compared (materialize the partition to refresh it)")
    for doc_id in wanted:
        report.checked["stable_ids"] += 1
        at = f"{spec.name} {day.isoformat()} doc {doc_id}"
        old, new = sorted(stored.get(doc_id, [])), sorted(fresh.get(doc_id, []))
        if doc_id not in docs:
            continue  # reported by the offsets check
        gone = {o[0] for o in old} - {n[0] for n in new}
        added = {n[0] for n in new} - {o[0] for o in old}
        if gone or added:
            report.fail("stable_ids", at, f"re-chunking the raw record changes ids: {len(gone)} stored id(s) not "
                        f"reproduced (e.g. {min(gone, default='-')}), {len(added)} new (e.g. {min(added, default='-')})")
        elif current and old != new:
            diff = next(o for o, n in zip(old, new) if o != n)
            report.fail("stable_ids", at, f"chunk {diff[0]}: stored seq/locator/text differ from a re-chunk of the "
                        "same raw record (the chunker is not deterministic, or the row was edited)")


def validate_dataset(wh: Warehouse, spec: DatasetSpec, *, sample: int = DEFAULT_SAMPLE, seed: int = 0,
                     days: Sequence[dt.date] | None = None) -> ValidationReport:
    """The checks on ``sample`` chunks spread over the dataset's published partitions (or ``days``)."""
    published = wh.partitions(spec.name, "chunks")
    chosen = sorted(d for d in published if days is None or d in days)
    report = ValidationReport(spec.name)
    if not chosen:
        report.notes.append(f"no published chunks partition of {spec.name}" + (" on the given days" if days else ""))
        return report
    # the sample is spread over partitions in proportion to their rows, at least one each
    sizes = {d: wh.read(spec.name, "chunks", d).num_rows for d in chosen}
    total = sum(sizes.values()) or 1
    for d in chosen:
        share = max(1, round(sample * sizes[d] / total)) if sizes[d] else 0
        raw = wh.read(spec.name, "raw", d) if wh.partition_path(spec.name, "raw", d).exists() else None
        docs = steps.documents_from_raw(raw) if raw is not None else []
        report.merge(validate_partition(spec, d, wh.read(spec.name, "chunks", d), docs, sample=share, seed=seed))
    return report
