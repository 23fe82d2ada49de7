"""The one registry of datasets: each entry generates its Dagster assets.

Adding a dataset is one :class:`DatasetSpec` in :func:`built_in_specs` plus its source
reader and chunker module, or, with no Python at all, one mapping file
(``docs/datasets/mappings.md``): the shipped ones in ``sources/mappings/`` and those of the
settings' mapping folders. :meth:`DatasetRegistry.build` makes the registry from the
settings; nothing in the Dagster layer names a dataset.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from codex_pipeline.chunkers import Chunker
from codex_pipeline.chunkers.civic import CivicLimits, chunk_civic
from codex_pipeline.chunkers.documents import DocumentLimits, chunk_documents
from codex_pipeline.chunkers.email import EmailLimits, chunk_email_threads
from codex_pipeline.chunkers.events import EventLimits, chunk_event
from codex_pipeline.chunkers.markdown import MarkdownLimits, chunk_markdown
from codex_pipeline.chunkers.narrative import WindowLimits, chunk_narrative
from codex_pipeline.chunkers.osha import OshaLimits, chunk_osha_case
from codex_pipeline.chunkers.permits import PermitLimits, chunk_permit
from codex_pipeline.chunkers.record_view import RecordLimits, chunk_record_view
from codex_pipeline.core.documents import LoadResult, Reject, SourceDocument
from codex_pipeline.core.rows import ROW_FORMAT
from codex_pipeline.settings import CodexSettings
from codex_pipeline.sources.ais import load_ais_day
from codex_pipeline.sources.civic import load_civic_day
from codex_pipeline.sources.documents import iter_documents_day, load_documents_day
from codex_pipeline.sources.email.reader import load_email_day
from codex_pipeline.sources.events import load_events_day
from codex_pipeline.sources.mapping.columns import mapping_columns, schema_columns
from codex_pipeline.sources.mapping.kinds import MappedDataset, load_mapped_dataset, mapping_files
from codex_pipeline.sources.mapping.schema import MappingError, mapping_digest, with_line
from codex_pipeline.sources.markdown import iter_docs_day, load_docs_day
from codex_pipeline.sources.narrative import iter_narrative_day, load_narrative_day
from codex_pipeline.sources.osha import load_osha_day
from codex_pipeline.sources.pdf_ocr import ENGINE as OCR_ENGINE
from codex_pipeline.sources.permits import (
    CALGARY_MAPPING_FILE,
    MAPPINGS_DIR,
    PERMIT_SCHEMA,
    calgary_mapping,
    load_permits_day,
)
from codex_pipeline.sources.structured import (
    load_lehd_flows_day,
    load_poi_intelligence_day,
    load_urban_signal_grid_day,
)


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset: how its landing days are read and chunked, and the versions that say when to rebuild them."""

    name: str
    description: str
    load_day: Callable[[Path], LoadResult]  # a landing day folder -> documents + rejects
    chunker: Chunker | None  # None: exported raw only, no `_chunks` table
    chunker_revision: str  # bump when the chunker's code changes its output
    limits: Any = None  # the chunker's size limits (a frozen dataclass), handed to it on every call
    source_version: str = "1"  # bump when the reader's output changes
    encodes_documents: bool = False  # the chunker encodes each document's whole text (see tokens.encoded_ahead)
    snapshot: bool = False  # each landing day is a full export: a document absent from the newest one is deleted
    # seed 002: `[ds, propositions]` (atomic statements with a back-reference to their chunk). On for dense factual
    # records (permits, OSHA, events, docs); off for narrative, transcripts, email and key-value record views
    # (propositions fragment a story; a record view's lines are already atomic). docs/propositions.md
    propositions: bool = False

    # a reader that yields a day's documents one at a time (rejects appended as found), so the
    # raw step's memory is bounded by a row group, not by the day; None: load_day reads the day whole
    iter_day: Callable[[Path, list[Reject]], Iterator[SourceDocument]] | None = None
    # a day whose rejected share of rows read is over this fails its raw step (and so does one where none landed);
    # None: not checked (the built-ins' samples reject on purpose). Mapped datasets: the mapping's, default 0.5
    max_reject_ratio: float | None = None
    mapping_file: Path | None = None  # the mapping a mapped dataset was registered from, for error lines
    # ((field, value type), …) of the payload: the typed columns of `codex.<dataset>_records` (none: no such view)
    record_columns: tuple[tuple[str, str], ...] = ()

    @property
    def chunked(self) -> bool:
        """False for a dataset exported raw only (no chunker, no ``_chunks`` table)."""
        return self.chunker is not None

    def documents(self, day_dir: Path, rejects: list[Reject]) -> Iterator[SourceDocument]:
        """The day's documents, streamed where the reader can; rejects are appended to ``rejects``."""
        if self.iter_day is not None:
            yield from self.iter_day(day_dir, rejects)
            return
        loaded = self.load_day(day_dir)
        rejects.extend(loaded.rejects)
        yield from loaded.documents

    @property
    def chunking_version(self) -> str:
        """``{chunker_revision}+{fingerprint of limits and row format}``: a new limit is a new version.

        It is what Dagster's ``code_version``, the Parquet footer and the row column
        carry, so the version sensor re-chunks every partition built with other limits
        or by an older :data:`~codex_pipeline.core.rows.ROW_FORMAT` (ids, anchors, locators).
        """
        if self.limits is None:
            return f"{self.chunker_revision}+r{ROW_FORMAT}"
        fields = {"class": type(self.limits).__name__, **dataclasses.asdict(self.limits), "row_format": ROW_FORMAT}
        digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:8]
        return f"{self.chunker_revision}+{digest}"


@functools.cache
def built_in_specs() -> tuple[DatasetSpec, ...]:
    """The datasets with a reader and chunker of their own (made on first use: permit_signals' version
    digests the Calgary mapping file, and importing reads no file)."""
    return (
        DatasetSpec(
            name="narrative",
            description="Unstructured text and scraped HTML pages, chunked by the 600/550 token-window fallback.",
            load_day=load_narrative_day,
            iter_day=iter_narrative_day,
            chunker=chunk_narrative,
            limits=WindowLimits(window_tokens=600, overlap_tokens=50),
            encodes_documents=True,
            chunker_revision="1.0",
            source_version="2",  # 2: xpaths from the HTML5 DOM (selectolax)
        ),
        DatasetSpec(
            name="civic_intelligence",
            description="Council meeting records (JSON Lines, pandera-validated), diarized transcripts, agendas and "
            "minutes (PDF, DOCX, text) and transcripts without speakers (captions, one-line Whisper), chunked as "
            "agenda-item trees: agenda_item → speaker_turn / item_text / motion / condition / contingency / "
            "transcript_segment.",
            load_day=load_civic_day,
            chunker=chunk_civic,
            limits=CivicLimits(merge_below_tokens=50, max_merged_tokens=400),
            chunker_revision="3.0",  # 3.0: agendas, minutes and transcripts without speakers (chunkers/meetings.py)
            source_version="4",  # 4: agendas, minutes (PDF, DOCX, text) and captions / one-line transcripts are read
        ),
        DatasetSpec(
            name="events_timeline",
            description="Timeline events (JSON Lines, pandera-validated): one `event` chunk per event; descriptions "
            "over 800 tokens become 800/50-token windows under the event header.",
            load_day=load_events_day,
            chunker=chunk_event,
            limits=EventLimits(window_tokens=800, overlap_tokens=50),
            chunker_revision="1.0",
            source_version="2",  # 2: the reader stores its structure (raw.blocks)
            propositions=True,
        ),
        DatasetSpec(
            name="permit_signals",
            description="Building permits (native JSON Lines or City of Calgary CSV): permit_summary → "
            "permit_scope_section and condition chunks.",
            load_day=load_permits_day,
            chunker=chunk_permit,
            limits=PermitLimits(),
            chunker_revision="1.0",
            # 2: the reader stores its structure (raw.blocks); +digest of the Calgary mapping file
            source_version=f"2+{mapping_digest(calgary_mapping())}",
            propositions=True,
            record_columns=schema_columns(PERMIT_SCHEMA),
        ),
        DatasetSpec(
            name="osha_safety",
            description="OSHA enforcement cases (JSON Lines with nested citations): osha_case_summary → one "
            "osha_citation per citation.",
            load_day=load_osha_day,
            chunker=chunk_osha_case,
            limits=OshaLimits(),
            chunker_revision="1.0",
            source_version="2",  # 2: the reader stores its structure (raw.blocks)
            propositions=True,
        ),
        DatasetSpec(
            name="urban_signal_grid",
            description="Daily urban signals per H3 grid cell (JSON Lines or CSV): one record_view chunk per record.",
            load_day=load_urban_signal_grid_day,
            chunker=chunk_record_view,
            limits=RecordLimits(),
            chunker_revision="1.0",
        ),
        DatasetSpec(
            name="lehd_flows",
            description="LEHD LODES origin-destination job flows (CSV or JSON Lines): one record_view chunk per flow.",
            load_day=load_lehd_flows_day,
            chunker=chunk_record_view,
            limits=RecordLimits(),
            chunker_revision="1.0",
        ),
        DatasetSpec(
            name="poi_intelligence",
            description="Points of interest with observed activity (JSON Lines): one record_view chunk per place.",
            load_day=load_poi_intelligence_day,
            chunker=chunk_record_view,
            limits=RecordLimits(),
            chunker_revision="1.0",
        ),
        DatasetSpec(
            name="ais_positions",
            description="AIS vessel positions (MarineCadastre CSV or JSON Lines): validated raw export only, "
            "never chunked (one row is one point-in-time record).",
            load_day=load_ais_day,
            chunker=None,
            chunker_revision="1.0",
        ),
        DatasetSpec(
            name="docs",
            description="Markdown documentation (.md/.mdx, front matter as metadata): split on H1–H3 with the header "
            "path kept, small sections fused, large ones split with overlap (256/512/32 tokens).",
            load_day=load_docs_day,
            iter_day=iter_docs_day,
            chunker=chunk_markdown,
            limits=MarkdownLimits(min_size=256, max_size=512, overlap=32, unit="tokens"),
            encodes_documents=True,
            chunker_revision="1.2",  # 1.2: a heading never leaves its first block (docs/datasets/docs.md)
            source_version="2",  # 2: CommonMark structure (markdown-it) in raw.blocks
            propositions=True,
        ),
        DatasetSpec(
            name="email_threads",
            description="Email exports (mbox incl. pipermail, .eml) rebuilt into reply threads: email_thread summary → "
            "email_window children (10 messages / 512 tokens, 2 overlapping), quoted repeats referenced.",
            load_day=load_email_day,
            chunker=chunk_email_threads,
            limits=EmailLimits(max_emails_per_chunk=10, max_tokens=512, overlap_emails=2),
            chunker_revision="1.1",  # 1.1: threads without their root get their own id
            source_version="4",  # 4: Outlook blocks, attributions and repeated signatures referenced (sources.email.quoting)
        ),
        DatasetSpec(
            name="documents",
            description="Files as users have them (PDF, DOCX, Markdown, HTML, text), routed by content: pages with "
            "exact offsets, running headers/footers kept out of chunks, chunks packed from headings, items, tables "
            "and paragraphs (512 tokens) with `p=` the page a chunk starts on (docs/datasets/documents.md).",
            load_day=load_documents_day,
            iter_day=iter_documents_day,
            chunker=chunk_documents,
            limits=DocumentLimits(),
            chunker_revision="1.0",
            source_version=f"3+{OCR_ENGINE}",  # 3: chapter/alternating running headers, boxes on the displayed page
            propositions=True,
        ),
        # -- end of DATASETS: add new entries above this line --
    )


MAPPED_READER_REVISION = "1"  # bump when the mapping reader's output changes for the same mapping file


def mapped_spec(md: MappedDataset) -> DatasetSpec:
    """A mapping file's dataset: the kind's chunker, ``source_version`` = reader revision + file digest."""
    kinds: dict[str, tuple[Chunker, Any]] = {
        "permit": (chunk_permit, PermitLimits()),
        "event": (chunk_event, EventLimits(window_tokens=800, overlap_tokens=50)),
    }
    chunker, limits = kinds.get(md.mapping.kind, (chunk_record_view, RecordLimits()))
    return DatasetSpec(
        name=md.name,
        description=md.description,
        load_day=md.load_day,
        chunker=chunker,
        limits=limits,
        chunker_revision="1.0",
        source_version=f"{MAPPED_READER_REVISION}+{md.digest}",
        propositions=bool(md.mapping.propositions),
        max_reject_ratio=md.mapping.max_reject_ratio,
        mapping_file=md.path,
        iter_day=md.iter_day,  # a CSV mapping streams its days page by page (None: load_day, whole)
        record_columns=mapping_columns(md.mapping),
    )


class DatasetRegistry(Sequence[DatasetSpec]):
    """The built-in datasets, then one per mapping file; a value: built once per settings, never changed.

    The code location's asset factories and every command iterate it; two registries
    built from different settings (another mappings folder) live side by side.
    """

    def __init__(self, specs: Sequence[DatasetSpec], mapping_files: Mapping[str, Path] | None = None) -> None:
        self._specs = tuple(specs)
        self._mapping_files = dict(mapping_files or {})
        self._by_name = {s.name: s for s in self._specs}

    @classmethod
    def build(cls, settings: CodexSettings) -> DatasetRegistry:
        """The built-ins, the shipped example mappings and every mapping file of ``settings.mapping_folders``.

        Raises :class:`MappingError` for a mapping that cannot be read or whose dataset
        name is already taken (by a built-in or an earlier mapping).
        """
        paths = [p for p in mapping_files(MAPPINGS_DIR) if p != CALGARY_MAPPING_FILE]  # Calgary: permit_signals' CSV
        seen: set[Path] = set()
        for folder in settings.mapping_folders:
            resolved = Path(folder).resolve()
            if resolved not in seen:
                seen.add(resolved)
                paths += mapping_files(resolved)
        specs, origin = list(built_in_specs()), dict[str, Path]()
        for path in paths:
            spec = _mapped(path, {s.name for s in specs}, origin)
            specs.append(spec)
            origin[spec.name] = path
        return cls(specs, origin)

    @overload
    def __getitem__(self, i: int) -> DatasetSpec: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[DatasetSpec]: ...
    def __getitem__(self, i: int | slice) -> DatasetSpec | Sequence[DatasetSpec]:
        return self._specs[i]

    def __len__(self) -> int:
        return len(self._specs)

    def get(self, name: str) -> DatasetSpec:
        """The dataset called ``name``; :class:`KeyError` naming the known ones."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"unknown dataset {name!r}; known: {', '.join(self.names())}") from None

    def names(self, chunked: bool = False) -> list[str]:
        """The registered names, in order (only the chunked datasets' when ``chunked``)."""
        return [s.name for s in self._specs if s.chunked or not chunked]

    def mapping_file(self, name: str) -> Path | None:
        """The mapping file a dataset was registered from (None: built in)."""
        return self._mapping_files.get(name)


def _mapped(path: Path, taken: set[str], origin: Mapping[str, Path]) -> DatasetSpec:
    """A mapping file's dataset; a name already taken is a :class:`MappingError`."""
    md = load_mapped_dataset(path)
    if md.name in taken:
        first = origin.get(md.name)
        where = f"mapping {first}" if first else "a built-in dataset"
        raise with_line(MappingError(f"mapping {path}: key 'dataset': {md.name!r} is already {where}; fix: choose another "
                                     "name"), path, path.read_text(encoding="utf-8"))
    return mapped_spec(md)


@functools.cache
def default_registry() -> DatasetRegistry:
    """The registry of the default settings (built-ins and shipped mappings, no mappings folder): what
    scripts, benchmarks and tests that name a built-in dataset use."""
    return DatasetRegistry.build(CodexSettings())


def get_dataset(name: str) -> DatasetSpec:
    """A dataset of :func:`default_registry` by name; :class:`KeyError` naming the known ones."""
    return default_registry().get(name)
