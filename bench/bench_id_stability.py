"""Benchmark: how many chunk ids survive each kind of edit (seed 003: >= 0.95 kept or redirected one-to-one).

    python bench/bench_id_stability.py [CORPORA_DIR]

Each edit type is applied once to every document it fits (the httpx Markdown docs, the
council transcripts, the python-committers mbox files; the permit and table edits use the
bundled sample landing data, the shared corpora having no Markdown table or permit
condition). Both versions are read and chunked in memory exactly as the chunks asset does
(``steps.ingest`` → ``steps.chunk``); the redirect table is computed from old to new
(``compute_redirects``). Over the documents the edit touched, every old id is then
**kept** (still in the new table), **redirected 1:1** (its redirect target is a new id no
other old id points at), **redirected n:1** (a shared target) or **removed**.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.redirects.matching import compute_redirects

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "codex_pipeline" / "sample_landing"
DAY = dt.date(2026, 11, 24)
ADDED = "This sentence was added in a later revision of the document."
Edit = Callable[[str, random.Random], str | None]  # a file's text -> edited text (None: the edit does not fit)


# -- Markdown ---------------------------------------------------------------------------------

def _lines_outside_fences(lines: list[str]) -> list[int]:
    out, fence = [], False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        if not fence:
            out.append(i)
    return out


def _h2(lines: list[str]) -> list[int]:
    return [i for i in _lines_outside_fences(lines) if lines[i].startswith("## ")]


def _paragraph_lines(lines: list[str]) -> list[int]:
    return [i for i in _lines_outside_fences(lines)
            if len(lines[i]) > 60 and lines[i][0].isalpha() and ". " in lines[i]]


def _middle(xs: list[int]) -> int:
    return xs[len(xs) // 2]


def typo(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    paras = _paragraph_lines(lines)
    if not paras:
        return None
    i = _middle(paras)
    words = [m for m in re.finditer(r"\b[a-z]{6,}\b", lines[i])]
    if not words:
        return None
    w = words[len(words) // 2]
    fixed = w.group()[0] + w.group()[2] + w.group()[1] + w.group()[3:]  # two letters swapped
    lines[i] = lines[i][: w.start()] + fixed + lines[i][w.end():]
    return "\n".join(lines)


def sentence_added(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    paras = _paragraph_lines(lines)
    if not paras:
        return None
    i = _middle(paras)
    k = lines[i].index(". ") + 2
    lines[i] = lines[i][:k] + ADDED + " " + lines[i][k:]
    return "\n".join(lines)


def paragraph_at_top(text: str, rng: random.Random) -> str | None:
    return f"{ADDED} It opens the page, before anything else.\n\n{text}"


def section_inserted(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    heads = _h2(lines)
    if len(heads) < 2:
        return None
    i = _middle(heads)
    lines[i:i] = ["## A section added later", "", f"{ADDED} It explains a new option in two sentences.", ""]
    return "\n".join(lines)


def heading_renamed(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    heads = _h2(lines)
    if not heads:
        return None
    i = _middle(heads)
    lines[i] = lines[i] + " and more"
    return "\n".join(lines)


def _sections(lines: list[str]) -> list[tuple[int, int]] | None:
    heads = _h2(lines)
    if len(heads) < 3:
        return None
    bounds = heads + [len(lines)]
    return [(bounds[k], bounds[k + 1]) for k in range(len(heads))]


def sections_swapped(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    secs = _sections(lines)
    if secs is None:
        return None
    k = len(secs) // 2 - 1
    (a0, a1), (b0, b1) = secs[k], secs[k + 1]
    return "\n".join(lines[:a0] + lines[b0:b1] + lines[a0:a1] + lines[b1:])


def section_deleted(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    secs = _sections(lines)
    if secs is None:
        return None
    a, b = secs[len(secs) // 2]
    return "\n".join(lines[:a] + lines[b:])


def table_row_added(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    for i in _lines_outside_fences(lines):
        if i + 2 < len(lines) and lines[i].lstrip().startswith("|") and re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[i + 1]):
            cells = lines[i].count("|") - 1
            lines.insert(i + 3, "| " + " | ".join(["added row"] * max(cells, 1)) + " |")
            return "\n".join(lines)
    return None


# -- transcripts, email, permits ----------------------------------------------------------------

SEPARATOR = "-" * 50


def turn_added(text: str, rng: random.Random) -> str | None:
    seps = [m.end() for m in re.finditer(rf"^{SEPARATOR}\n", text, re.M)]
    if len(seps) < 3:
        return None
    at = seps[len(seps) // 2]
    turn = ("Commissioner Added:\nStart: 01:00:00.000\nEnd: 01:00:09.000\nDuration: 9.000 seconds\n"
            f"Text: {ADDED} I would like that noted for the record before we move on to the next item.\n{SEPARATOR}\n")
    return text[:at] + turn + text[at:]


def permit_condition_added(text: str, rng: random.Random) -> str | None:
    out = []
    for line in text.splitlines():
        rec = json.loads(line)
        conds = rec.get("conditions") or []
        added = {"category": "general", "text": f"{ADDED} Construction hours are limited to 7 am to 6 pm on weekdays."}
        if any("condition_id" in c for c in conds):  # the record's own shape: ids and a status, or neither
            added = {"condition_id": f"C-{len(conds) + 1}-added", "status": "open", **added}
        conds.append(added)
        rec["conditions"] = conds
        out.append(json.dumps(rec, ensure_ascii=False))
    return "\n".join(out) + "\n"


_MSG = re.compile(r"^Message-ID: (<[^>]+>)", re.M)
_SUBJECT = re.compile(r"^Subject: (.*)$", re.M)


def reply_added(text: str, rng: random.Random) -> str | None:
    """A reply to every 10th message, appended to the mbox (one new message per thread touched)."""
    starts = [m.start() for m in re.finditer(r"^From \S+ at \S+ ", text, re.M)] + [len(text)]
    replies = []
    for n, (a, b) in enumerate(zip(starts, starts[1:])):
        msg = text[a:b]
        mid, subj = _MSG.search(msg), _SUBJECT.search(msg)
        if n % 10 or not mid:
            continue
        subject = subj.group(1) if subj else "(no subject)"
        replies.append(
            f"From bench at example.org  Sun Dec 31 12:00:{n % 60:02d} 2017\nFrom: bench at example.org (Bench)\n"
            f"Date: Sun, 31 Dec 2017 12:00:{n % 60:02d} +0000\nSubject: Re: {subject.removeprefix('Re: ')}\n"
            f"In-Reply-To: {mid.group(1)}\nReferences: {mid.group(1)}\nMessage-ID: <bench-{n}@example.org>\n\n"
            f"{ADDED} Thanks, this works for me.\n\n"
        )
    if not replies:
        return None
    return text.rstrip("\n") + "\n\n" + "".join(replies)


# -- measuring --------------------------------------------------------------------------------

def _chunks(dataset: str, files: dict[str, str]) -> pa.Table:
    spec = get_dataset(dataset)
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).write_text(text, encoding="utf-8")
        loaded = spec.load_day(Path(tmp))
    raw = steps.ingest(spec, DAY, loaded.documents, loaded.rejects).table
    return steps.chunk(spec, DAY, steps.documents_from_raw(raw)).table


def _texts(table: pa.Table) -> dict[str, str]:
    by_doc: dict[str, list[str]] = {}
    for d, h in zip(table.column("doc_id").to_pylist(), table.column("content_hash").to_pylist()):
        by_doc.setdefault(d, []).append(h)
    return {d: "".join(hs) for d, hs in by_doc.items()}


def measure(dataset: str, files: dict[str, str], edit: Edit) -> dict[str, int]:
    rng = random.Random(3)
    edited = {rel: edit(text, rng) for rel, text in files.items()}
    if not any(v is not None for v in edited.values()):
        return {}
    before = _chunks(dataset, files)
    after = _chunks(dataset, {rel: (new if new is not None else files[rel]) for rel, new in edited.items()})
    old_docs, new_docs = _texts(before), _texts(after)
    touched = {d for d in old_docs if new_docs.get(d) != old_docs[d]}
    redirects = compute_redirects(before, after, dataset=dataset, partition_date=DAY, chunking_version="bench")
    targets: dict[str, int] = {}
    rows = {r["old_chunk_id"]: r for r in redirects.to_pylist()}
    for r in rows.values():
        if r["new_chunk_id"]:
            targets[r["new_chunk_id"]] = targets.get(r["new_chunk_id"], 0) + 1
    new_ids = set(after.column("chunk_id").to_pylist())
    counts = {"documents": len(touched), "old_ids": 0, "kept": 0, "redirected_1to1": 0, "redirected_nto1": 0, "removed": 0}
    for cid, doc in zip(before.column("chunk_id").to_pylist(), before.column("doc_id").to_pylist()):
        if doc not in touched:
            continue
        counts["old_ids"] += 1
        if cid in new_ids:
            counts["kept"] += 1
        elif cid in rows and rows[cid]["new_chunk_id"]:
            target = rows[cid]["new_chunk_id"]
            one = targets[target] == 1 and target not in set(before.column("chunk_id").to_pylist())
            counts["redirected_1to1" if one else "redirected_nto1"] += 1
        else:
            counts["removed"] += 1
    return counts


def _read(folder: Path, pattern: str) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8") for p in sorted(folder.glob(pattern))}


def main() -> None:
    corpora = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "corpora"
    markdown = _read(corpora / "markdown" / "httpx", "**/*.md")
    tables = {f"{d.name}/{p.name}": p.read_text() for d in sorted((SAMPLE / "docs").iterdir())
              for p in sorted(d.rglob("*.md")) if "|" in p.read_text()}
    council = _read(corpora / "council", "*.txt")
    email = _read(corpora / "email", "*.mbox")
    permits = {f"{d.name}.jsonl": (d / "permits.jsonl").read_text() for d in sorted((SAMPLE / "permit_signals").iterdir())
               if (d / "permits.jsonl").exists()}
    cases: list[tuple[str, str, dict[str, str], Edit, bool]] = [
        ("typo fix", "docs", markdown, typo, False),
        ("sentence added in a paragraph", "docs", markdown, sentence_added, False),
        ("paragraph inserted at the top", "docs", markdown, paragraph_at_top, False),
        ("section inserted", "docs", markdown, section_inserted, False),
        ("heading renamed", "docs", markdown, heading_renamed, False),
        ("sections swapped", "docs", markdown, sections_swapped, False),
        ("section deleted", "docs", markdown, section_deleted, True),
        ("table row added", "docs", tables, table_row_added, False),
        ("reply added to a thread", "email_threads", email, reply_added, False),
        ("turn added to a transcript", "civic_intelligence", council, turn_added, False),
        ("permit condition added", "permit_signals", permits, permit_condition_added, False),
    ]
    print(f"{'edit':32s} {'dataset':19s} {'docs':>4s} {'old ids':>7s} {'kept':>6s} {'1:1':>6s} {'n:1':>6s} "
          f"{'removed':>7s} {'kept+1:1':>8s}  target")
    for name, dataset, files, edit, deleting in cases:
        c = measure(dataset, files, edit)
        if not c or not c["old_ids"]:
            print(f"{name:32s} {dataset:19s} (the edit fits no document)")
            continue
        n = c["old_ids"]
        ok = (c["kept"] + c["redirected_1to1"]) / n
        verdict = "n/a (deletes content)" if deleting else ("ok" if ok >= 0.95 else "MISSED")
        print(f"{name:32s} {dataset:19s} {c['documents']:4d} {n:7d} {c['kept'] / n:6.3f} {c['redirected_1to1'] / n:6.3f} "
              f"{c['redirected_nto1'] / n:6.3f} {c['removed'] / n:7.3f} {ok:8.3f}  {verdict}")


if __name__ == "__main__":
    main()
