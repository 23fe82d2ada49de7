"""What a day's step did, as values: the Dagster layer turns them into metadata and checks.

Every result is frozen, so a caller (an asset, the CLI, a test) reads what happened
and cannot change it. Mappings are plain dicts for JSON; sequences are tuples.
"""

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from codex_pipeline.core.contract_check import ContractReport
from codex_pipeline.datasets.validation import ValidationReport
from codex_pipeline.retrieval import IndexManifest
from codex_pipeline.warehouse.current import UniqueIds


class StepLog(Protocol):
    """Where a step reports as it goes: a ``logging.Logger``, Dagster's ``context.log``, a test's recorder."""

    def info(self, msg: str, *args: Any) -> Any:
        """Progress, logged as it happens."""
        ...

    def warning(self, msg: str, *args: Any) -> Any:
        """Something the step's result reports too (a damaged file, rejects, a cost-cap stop)."""
        ...

    def error(self, msg: str, *args: Any) -> Any:
        """A failure the step survives and reports (a day whose contract failed)."""
        ...


@dataclass(frozen=True)
class RawDayResult:
    """One landing day ingested into ``raw`` (with its rejects and, for a chunked dataset, tombstones)."""

    dataset: str
    day: dt.date
    landing: Path
    skipped: bool = False  # nothing landed and nothing to retract: no file was written
    documents: int = 0
    rejects: int = 0
    rejects_preview: str = ""  # Markdown table of the first rejects
    tombstones: int = 0  # accepted retractions
    tombstone_rejects: int = 0
    current: dict[str, int] = field(default_factory=dict)  # the current-corpus change, when the index moved
    path: Path | None = None
    views_created: tuple[str, ...] = ()
    damaged: tuple[str, ...] = ()  # damaged files set aside before the step read anything
    warnings: tuple[str, ...] = ()  # what was logged at warning level or above
    rows: dict[str, int] = field(default_factory=dict)  # rows_read / rows_landed / rows_rejected of row-reading files
    rows_by_file: str = ""  # Markdown table: each row-reading file's rows read, landed, rejected
    files: dict[str, int] = field(default_factory=dict)  # files_found = files_landed + files_rejected + files_skipped


@dataclass(frozen=True)
class ChunkSummary:
    """Counts and token percentiles of a day's chunk rows (``explore.stats.chunk_summary``)."""

    documents: int
    chunks: int
    chunks_by_type: dict[str, int]
    tokens: dict[str, int]  # p50, p95, max (and whatever else the percentiles hold)
    tokens_by_type: dict[str, dict[str, int]]


@dataclass(frozen=True)
class ChunksDayResult:
    """One raw day chunked, contract-checked, and published or quarantined."""

    dataset: str
    day: dt.date
    chunking_version: str
    contract: ContractReport
    summary: ChunkSummary
    path: Path  # the published file, or the quarantined one when the contract failed
    rejects: int = 0
    redirects: dict[str, int] = field(default_factory=dict)  # new redirect rows by match kind
    preview: str = ""  # Markdown table of the first chunks
    token_histogram: str = ""  # Markdown (an inline chart) of the day's token counts
    current: dict[str, int] = field(default_factory=dict)
    views_created: tuple[str, ...] = ()
    damaged: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def published(self) -> bool:
        """True when the chunks are live (without any document the contract rejected); False when quarantined."""
        return self.contract.publishable


@dataclass(frozen=True)
class EmbeddingTotals:
    """Counts summed over a run's days: chunk inputs and evidence-unit inputs."""

    inputs: int = 0
    reused: int = 0
    embedded: int = 0
    requests: int = 0  # model requests for chunk and unit inputs together
    recovered_from_checkpoint: int = 0
    long_inputs: int = 0
    evidence_units: int = 0
    evidence_units_reused: int = 0
    evidence_units_embedded: int = 0


@dataclass(frozen=True)
class EmbeddingsResult:
    """The days of one run embedded, every vector reused that could be."""

    dataset: str
    days: tuple[dt.date, ...]
    model: str
    version: str
    dimensions: int
    totals: EmbeddingTotals
    by_partition: dict[str, dict[str, int]]  # day -> that day's counts
    views_created: tuple[str, ...] = ()
    damaged: tuple[str, ...] = ()


@dataclass(frozen=True)
class PropositionsResult:
    """The days of one run's propositions extracted, contract-checked, and published or kept aside."""

    dataset: str
    days: tuple[dt.date, ...]
    extractor: str
    extractor_version: str
    prompt_version: str
    extractor_config: dict[str, Any]  # what the extractor says of itself (model, caps, ...)
    totals: dict[str, float]  # ``PropositionCounts`` summed over the days (``cost_usd`` a float, the rest counts)
    by_partition: dict[str, dict[str, float]]  # day -> that day's counts
    failures: tuple[dict[str, object], ...] = ()  # contract failures, each with its ``partition``
    stopped: tuple[str, ...] = ()  # the cost cap's messages, one per day it stopped
    run_cost_usd: float = 0.0
    views_created: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()  # one line per day whose contract failed (logged at error level)
    warnings: tuple[str, ...] = ()  # what was logged at warning level or above: rejects, cost-cap stops, errors

    @property
    def passed(self) -> bool:
        """True when every day's propositions met the contract (none was kept aside)."""
        return not self.failures

    @property
    def failed_checks(self) -> list[str]:
        """The contract checks that failed on any day, each once, sorted."""
        return sorted({str(f["check"]) for f in self.failures})


@dataclass(frozen=True)
class PropositionEmbeddingsResult:
    """The days of one run's contract-checked propositions embedded, every vector reused that could be."""

    dataset: str
    days: tuple[dt.date, ...]
    model: str
    version: str
    totals: dict[str, int]  # ``EmbedCounts`` summed over the days
    views_created: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchIndexResult:
    """The dataset's search index brought up to date with its current corpus (or found already so)."""

    dataset: str
    manifest: IndexManifest  # the live version after the step
    rebuilt: bool  # False when the inputs were unchanged since the live version: nothing was written
    path: Path  # the live version's folder
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class UniqueIdsResult:
    """The current corpus's ``chunk_id`` uniqueness, as users query it."""

    dataset: str
    unique: UniqueIds
    warning: str | None = None

    @property
    def passed(self) -> bool:
        """True when no ``chunk_id`` is on two rows of ``codex.<dataset>_chunks``."""
        return self.unique.passed


@dataclass(frozen=True)
class AddressResult:
    """The address validator on a sample of one published day."""

    dataset: str
    day: dt.date
    report: ValidationReport
    warning: str | None = None

    @property
    def passed(self) -> bool:
        """True when no address check failed on the sample."""
        return self.report.passed
