"""A mapped CSV day read page by page: memory holds a page of rows, not the file.

The raw step consumes a dataset's ``iter_day`` as a stream of documents and writes them in
bounded row groups; this is that stream for a mapped export. Each landing file is read in
pages (:func:`~codex_pipeline.sources.csv_rows.iter_csv_pages`: the same rows, refs and
rejects as reading it whole), and each page is built, validated, de-duplicated and rendered
before the next is read. What stays for the whole day is the ids seen so far (to reject a
later duplicate naming the first): :class:`FirstSeen`, about 80 bytes a row beyond the id.

Only for mappings whose rows are each final where they stand
(:attr:`~codex_pipeline.sources.mapping.kinds.MappedDataset.streams`: ``duplicates: reject``,
the default): a mapping whose later rows update or merge into earlier ones (``last`` / ``merge``)
is loaded whole by ``load_day``. Filters and optional-field notes apply page by page as they do whole.

What differs from ``load_day``: the order of rejects (a page's come before the next page's
documents are built, instead of all read rejects first); the documents, their order and the
set of rejects are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

from codex_pipeline.core.documents import Reject, SourceDocument
from codex_pipeline.sources.csv_rows import PAGE_ROWS, iter_csv_pages
from codex_pipeline.sources.files import landing_files
from codex_pipeline.sources.mapping.features import RowHooks
from codex_pipeline.sources.mapping.reader import SUFFIXES, build_records, header_problem, name_columns
from codex_pipeline.sources.mapping.schema import SourceMapping
from codex_pipeline.sources.records import RawRecord
from codex_pipeline.sources.structured import RecordRules, Rendering, build_documents
from codex_pipeline.sources.tally import count_filtered, count_rows


class KindParts(Protocol):
    """What a day's stream takes of a kind: :class:`~codex_pipeline.sources.mapping.kinds.KindParts`."""

    @property
    def build(self) -> Callable[[Mapping[str, Any]], dict[str, Any]] | None:
        """One row -> one record."""

    @property
    def rules(self) -> RecordRules:
        """The kind's record rules."""

    @property
    def render(self) -> Callable[[Mapping[str, Any]], Rendering | str]:
        """A record's canonical text."""

    @property
    def title(self) -> Callable[[Mapping[str, Any]], str | None]:
        """A record's document title."""

    @property
    def columns(self) -> dict[str, str]:
        """Target field -> export column(s), for reject reasons."""


def read_pages(mapping: SourceMapping, build: Callable[[Mapping[str, Any]], dict[str, Any]], path: Path,
               day_dir: Path, page_rows: int = PAGE_ROWS) -> Iterator[tuple[list[RawRecord], list[Reject]]]:
    """``(records, rejects)`` a page at a time: what :func:`~codex_pipeline.sources.mapping.reader.mapped_reader`
    returns for the file, split in pages. A header that does not fit the mapping rejects every row
    (one reject at the end, standing for them all); the file's row count goes to the tally at the end."""
    rel = path.relative_to(day_dir).as_posix()
    hooks = RowHooks(mapping)
    read = refused = filtered = 0
    problem: str | None = None
    for page in iter_csv_pages(path, day_dir, mapping.delimiter, mapping.encoding, page_rows):
        read += page.rows_read
        if page.rows and problem is None and not refused:
            problem = header_problem(mapping, page.header)
        if problem is not None:
            refused += len(page.rows)
            yield [], page.rejects
            continue
        rejects = list(page.rejects)
        records, left_out = build_records(mapping, build, hooks, rel, page.rows, page.refs, rejects)
        filtered += left_out
        yield records, rejects
    count_rows(rel, read)
    count_filtered(rel, filtered)
    if problem is not None and refused:
        every = f" (all {refused} rows of the file rejected with it)" if refused > 1 else ""
        yield [], [Reject(rel, problem + every, rows=refused)]


class FirstSeen:
    """Where each record id of a streamed day was first met, kept small: it lives as long as the day.

    The id string is the document's own (shared); where it was met is one int for a ``row N`` ref
    (line and file packed) instead of a ``"<file> row N"`` string, about 60 bytes less a row. The
    duplicates it finds are the ones :func:`~codex_pipeline.sources.records.dedupe_by` finds, with
    the same reasons.
    """

    def __init__(self) -> None:
        self.files: list[str] = []
        self._file_no: dict[str, int] = {}
        self.at: dict[str, int | str] = {}

    def _where(self, r: RawRecord) -> int | str:
        if r.ref.startswith("row ") and r.ref[4:].isdigit():
            no = self._file_no.setdefault(r.source_file, len(self.files))
            if no == len(self.files):
                self.files.append(r.source_file)
            return int(r.ref[4:]) * 4096 + no if no < 4096 else f"{r.source_file} {r.ref}"
        return f"{r.source_file} {r.ref}"

    def _text(self, where: int | str) -> str:
        return where if isinstance(where, str) else f"{self.files[where % 4096]} row {where // 4096}"

    def dedupe(self, records: list[RawRecord], id_field: str) -> tuple[list[RawRecord], list[Reject]]:
        """The records whose id is new (in order), and a reject per later duplicate naming the first."""
        keep, rejects = [], []
        for r in records:
            k = str(r.data[id_field])
            first = self.at.get(k)
            if first is not None:
                rejects.append(Reject(r.source_file, f"duplicate record id {k!r} (first at {self._text(first)})", r.ref))
                continue
            self.at[k] = self._where(r)
            keep.append(r)
        return keep, rejects


def iter_mapped_day(parts: KindParts, mapping: SourceMapping, dataset: str, day_dir: Path,
                    rejects: list[Reject], page_rows: int = PAGE_ROWS) -> Iterator[SourceDocument]:
    """The day's documents, a page at a time; every reject appended to ``rejects`` as it is found."""
    assert parts.build is not None, "a streamed kind has a row builder"
    suffix = SUFFIXES[mapping.format]
    id_field = parts.rules.schema.id_field
    seen = FirstSeen()  # record id -> where first met: later pages' duplicates name it
    for path in landing_files(day_dir):
        if path.suffix.lower() != suffix:
            rejects.append(Reject(path.relative_to(day_dir).as_posix(),
                                  f"unsupported file type {path.suffix or '(none)'!r}; expected one of {[suffix]}"))
            continue
        for records, bad in read_pages(mapping, parts.build, path, day_dir, page_rows):
            valid, invalid = parts.rules.validate(records)
            keep, dups = seen.dedupe(valid, id_field)
            out = build_documents(dataset, [(str(r.data[id_field]), r) for r in keep], parts.render, parts.title)
            rejects.extend(name_columns(bad + invalid + dups, parts.columns))
            rejects.extend(out.rejects)
            yield from out.documents
