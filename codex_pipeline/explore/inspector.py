"""Sanity-check a chunk table before embedding or retrieval: sizes, one chunk, a sample.

:class:`ChunkInspector` works on a :class:`~codex_pipeline.navigation.ChunkCollection`
(or an Arrow chunk table). Its texts are plain strings, so they print the same in a
terminal, a notebook or the ``codex inspect`` command. :func:`token_histogram_png`
draws token sizes per chunk type with the 1,500-token cap marked, small enough for
Dagster materialization metadata (:func:`token_histogram_markdown`). The PNG needs
matplotlib (the ``plot`` extra); without it the metadata carries the same histogram as a
Markdown table (:func:`token_histogram_table`).

Percentiles use the "nearest rank" rule of :mod:`codex_pipeline.stats`, so the
inspector and the Dagster asset metadata report the same p50 / p95.
"""

from __future__ import annotations

import base64
import io
import random
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from codex_pipeline.core.contract import MAX_CHUNK_TOKENS, ChunkType
from codex_pipeline.explore.navigation import Chunk, ChunkCollection, clip
from codex_pipeline.explore.stats import token_percentiles

__all__ = [
    "ChunkInspector",
    "Distribution",
    "Summary",
    "Text",
    "token_histogram_markdown",
    "token_histogram_png",
    "token_histogram_table",
]

PLOT_HINT = "pip install 'codex-pipeline[plot]'"


class Text(str):
    """A string that shows as itself in a REPL (no quotes, real newlines)."""

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Distribution:
    """min / p50 / p95 / max / mean of a list of sizes (nearest-rank percentiles)."""

    count: int
    min: int
    p50: int
    p95: int
    max: int
    mean: float

    @classmethod
    def of(cls, values: Iterable[int]) -> Distribution:
        """The distribution of ``values``; all zeros when there are none."""
        arr = np.fromiter(values, dtype=np.int64)
        if arr.size == 0:
            return cls(0, 0, 0, 0, 0, 0.0)
        pct = token_percentiles(arr)
        return cls(int(arr.size), int(arr.min()), pct["p50"], pct["p95"], pct["max"], round(float(arr.mean()), 1))

    def cells(self) -> list[str]:
        """min, p50, p95, max and mean formatted as table cells, in that order."""
        return [f"{self.min:,}", f"{self.p50:,}", f"{self.p95:,}", f"{self.max:,}", f"{self.mean:,.1f}"]

    def inline(self) -> str:
        """The same figures labelled, on one line."""
        return f"min {self.min:,} · p50 {self.p50:,} · p95 {self.p95:,} · max {self.max:,} · mean {self.mean:,.1f}"


@dataclass(frozen=True)
class Summary:
    """What :meth:`ChunkInspector.summary` measures; ``str()`` renders it as a report."""

    datasets: tuple[str, ...]
    partitions: tuple[str, ...]
    documents: int
    chunks: int
    top_level_chunks: int
    chunks_by_type: dict[str, int]
    tokens: Distribution
    chars: Distribution
    tokens_by_type: dict[str, Distribution]
    chars_by_type: dict[str, Distribution]
    chunks_per_document: Distribution
    cap: int
    over_cap: int
    over_cap_chunk_ids: tuple[str, ...] = field(default=())
    superseded_documents: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (e.g. for ``dg.MetadataValue.json``)."""
        return asdict(self)

    def render(self) -> str:
        """The report: counts, chunks per document, then token and character tables by chunk type."""
        scope = ", ".join(self.datasets) or "chunks"
        days = ", ".join(self.partitions) or "-"
        lines = [
            f"{scope}: partition(s) {days}",
            f"  documents {self.documents:,} · chunks {self.chunks:,} · top-level chunks {self.top_level_chunks:,}"
            f" · over the {self.cap:,}-token cap {self.over_cap:,}",
            f"  chunks per document: {self.chunks_per_document.inline()}",
        ]
        if self.superseded_documents:
            lines.append(
                f"  {self.superseded_documents:,} document(s) also in older partitions: latest partition shown"
            )
        if self.over_cap_chunk_ids:
            lines.append("  over the cap: " + ", ".join(self.over_cap_chunk_ids))
        for label, overall, per_type in (
            ("tokens", self.tokens, self.tokens_by_type),
            ("characters", self.chars, self.chars_by_type),
        ):
            rows = [[t, f"{self.chunks_by_type[t]:,}", *per_type[t].cells()] for t in self.chunks_by_type]
            rows.append(["(all)", f"{self.chunks:,}", *overall.cells()])
            lines.append("")
            lines.append(_table([f"{label} by type", "chunks", "min", "p50", "p95", "max", "mean"], rows))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return self.render()


class ChunkInspector:
    """Summaries and readable views of a chunk collection."""

    def __init__(self, chunks: ChunkCollection | pa.Table | Iterable[Chunk], cap: int = MAX_CHUNK_TOKENS) -> None:
        if isinstance(chunks, ChunkCollection):
            self.collection = chunks
        elif isinstance(chunks, pa.Table):
            self.collection = ChunkCollection.from_table(chunks)
        else:
            self.collection = ChunkCollection(chunks)
        self.cap = cap

    def summary(self, list_over_cap: int = 10) -> Summary:
        """Documents, chunks by type, token/char distributions, over-cap count, chunks per document."""
        col = self.collection
        tokens: dict[str, list[int]] = {}
        chars: dict[str, list[int]] = {}
        for c in col:
            tokens.setdefault(c.chunk_type, []).append(c.token_count)
            chars.setdefault(c.chunk_type, []).append(c.char_count)
        types = sorted(tokens)
        over = [c.chunk_id for c in col if c.token_count > self.cap]
        return Summary(
            datasets=col.datasets,
            partitions=tuple(d.isoformat() for d in col.partitions),
            documents=len(col.documents),
            chunks=len(col),
            top_level_chunks=sum(1 for c in col if c.parent_chunk_id is None),
            chunks_by_type={t: len(tokens[t]) for t in types},
            tokens=Distribution.of(c.token_count for c in col),
            chars=Distribution.of(c.char_count for c in col),
            tokens_by_type={t: Distribution.of(tokens[t]) for t in types},
            chars_by_type={t: Distribution.of(chars[t]) for t in types},
            chunks_per_document=Distribution.of(len(col.document_chunks(d)) for d in col.documents),
            cap=self.cap,
            over_cap=len(over),
            over_cap_chunk_ids=tuple(over[:list_over_cap]),
            superseded_documents=len(col.superseded),
        )

    def read_chunk(self, key: int | str, max_chars: int | None = None) -> Text:
        """One chunk, formatted: by position in the collection, ``chunk_id`` or content hash."""
        c = self._resolve(key)
        col = self.collection
        i = col.index(c)
        parent = col.parent(c)
        children = col.children(c)
        size = f"{c.token_count:,} tokens · {c.char_count:,} chars"
        if c.token_count > self.cap:
            size += f"  (OVER the {self.cap:,}-token cap)"
        where = " · ".join(
            x
            for x in (
                c.dataset or "",
                f"partition {c.partition_date.isoformat()}" if c.partition_date else "",
                f"chunking {c.chunking_version}" if c.chunking_version else "",
            )
            if x
        )
        doc_n = len(col.document_chunks(c.doc_id))
        rows = [
            ("document", f"{c.doc_id}  (seq {c.seq_index}, chunk {col.position(c) + 1} of {doc_n})"),
            ("stored", where or "-"),
            ("section", c.section_id),
            ("type", c.chunk_type),
            ("size", size),
            ("anchor", c.evidence_anchor or "-"),
            ("parent", f"{parent.chunk_id}  [{parent.chunk_type} {parent.section_id}]" if parent
             else (f"{c.parent_chunk_id}  (not in this collection)" if c.parent_chunk_id else "- (top-level)")),
            ("children", ", ".join(f"{ch.section_id}" for ch in children) if children else "0"),
            ("locator", c.locator or "-"),
            ("hash", c.content_hash or "-"),
            ("metadata", c.metadata or "-"),
        ]
        if c.embedding_model:
            rows.append(("embedding", f"{c.embedding_model}  ({c.embedding_version or 'no version'})"))
        head = f"chunk {i + 1} of {len(col)}  {c.chunk_id}"
        body = "\n".join(f"  {k:<9} {v}" for k, v in rows)
        return Text(f"{head}\n{body}\n  ---\n{clip(c.chunk_text, max_chars)}")

    def sample(self, doc_id: str | None = None, n: int = 5, seed: int | None = None) -> tuple[str, tuple[Chunk, ...]]:
        """A document (random unless given) and up to ``n`` of its chunks, in reading order.

        With a ``seed`` the choice is reproducible: the document is drawn from the sorted
        document ids, then ``n`` chunk positions from it when it has more than ``n``.
        """
        col = self.collection
        if not col.documents:
            raise ValueError("the collection has no documents to sample")
        if n < 1:
            raise ValueError("n must be >= 1")
        rng = random.Random(seed)
        doc = doc_id if doc_id is not None else rng.choice(col.documents)
        chunks = col.document_chunks(doc)
        if len(chunks) > n:
            chunks = tuple(chunks[i] for i in sorted(rng.sample(range(len(chunks)), n)))
        return doc, chunks

    def sample_document(
        self, doc_id: str | None = None, n: int = 5, seed: int | None = None, max_chars: int | None = 300
    ) -> Text:
        """:meth:`sample`, formatted: each chunk's header and (clipped) text."""
        doc, chunks = self.sample(doc_id, n, seed)
        total = len(self.collection.document_chunks(doc))
        shown = "all" if len(chunks) == total else f"{len(chunks)} sampled: seq " + ", ".join(
            str(c.seq_index) for c in chunks
        )
        parts = [f"document {doc} · {total} chunk(s), {shown}"]
        parts += [c.chunk_str(max_chars) for c in chunks]
        return Text("\n\n".join(parts))

    def _resolve(self, key: int | str) -> Chunk:
        col = self.collection
        if isinstance(key, int):
            try:
                return col[key]
            except IndexError:
                raise IndexError(f"chunk index {key} out of range: the collection has {len(col)} chunks") from None
        found = col.get(key) or col.get_by_hash(key)
        if found is None:
            raise KeyError(f"no chunk with id or content hash {key!r} in this collection")
        return found


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Plain-text table: first column left-aligned, numbers right-aligned."""
    every = [header, *rows]
    widths = [max(len(r[i]) for r in every) for i in range(len(header))]
    return "\n".join(
        "  " + "  ".join(s.ljust(w) if i == 0 else s.rjust(w) for i, (s, w) in enumerate(zip(r, widths)))
        for r in every
    )


# -- token histogram ------------------------------------------------------------

_TYPE_ORDER = [t.value for t in ChunkType]


def _types_and_tokens(chunks: pa.Table | Iterable[Chunk]) -> tuple[list[str], np.ndarray]:
    if isinstance(chunks, pa.Table):
        return chunks.column("chunk_type").to_pylist(), chunks.column("token_count").to_numpy(zero_copy_only=False)
    items = list(chunks)
    return [c.chunk_type for c in items], np.fromiter((c.token_count for c in items), dtype=np.int64, count=len(items))


def token_histogram_png(
    chunks: pa.Table | Iterable[Chunk],
    cap: int = MAX_CHUNK_TOKENS,
    title: str | None = None,
    dpi: int = 80,
) -> bytes:
    """A PNG histogram of token sizes, stacked by chunk type, with the cap marked.

    Deterministic (same rows, same bytes: no timestamp or version in the file) and
    small (about 15–30 kB at the default size). Takes a chunk table (Arrow, with
    ``chunk_type`` and ``token_count``), a :class:`ChunkCollection` or chunks.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.style import context as style_context
        from matplotlib.ticker import MaxNLocator
    except ImportError as exc:
        raise ImportError(f"the PNG token histogram needs matplotlib: {PLOT_HINT}") from exc

    types, tokens = _types_and_tokens(chunks)
    present = _present_types(types)
    # log-spaced bins: a 20-token speaker turn and a 1,400-token section both stay readable
    top = max(int(tokens.max()) if tokens.size else 0, cap) * 1.15
    edges = np.geomspace(1, top, 49)

    with style_context("default"):  # ignore any user matplotlibrc: same rows, same picture
        fig = Figure(figsize=(8.0, 3.4), dpi=dpi, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        if tokens.size:
            palette = _palette()
            arr_types = np.asarray(types, dtype=object)
            series = [tokens[arr_types == t] for t in present]
            ax.hist(
                [np.clip(x, 1, None) for x in series],
                bins=list(edges),
                stacked=True,
                color=[palette[_TYPE_ORDER.index(t) % len(palette)] if t in _TYPE_ORDER
                       else palette[(len(_TYPE_ORDER) + i) % len(palette)] for i, t in enumerate(present)],
                label=[f"{t} ({len(s):,})" for t, s in zip(present, series)],
                edgecolor="white",
                linewidth=0.3,
            )
        else:
            ax.text(0.5, 0.5, "no chunks", transform=ax.transAxes, ha="center", va="center", color="0.4")
        over = int((tokens > cap).sum()) if tokens.size else 0
        ax.axvline(cap, color="#c0392b", linestyle="--", linewidth=1.2, label=f"{cap:,}-token cap ({over:,} over)")
        ax.set_xscale("log")
        ax.set_xlim(1, edges[-1])
        ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000) if t <= edges[-1]]
        ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("tokens per chunk (cl100k_base, log scale)", fontsize=8)
        ax.set_ylabel("chunks", fontsize=8)
        ax.tick_params(labelsize=7)
        stats = ""
        if tokens.size:
            pct = token_percentiles(tokens)
            stats = f"{tokens.size:,} chunks · p50 {pct['p50']:,} · p95 {pct['p95']:,} · max {pct['max']:,}"
        ax.set_title(" — ".join(x for x in (title or "token sizes by chunk type", stats) if x), fontsize=9)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        ax.spines[["top", "right"]].set_visible(False)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata={"Software": None})  # no version: stable bytes
    return buf.getvalue()


def token_histogram_markdown(
    chunks: pa.Table | Iterable[Chunk], cap: int = MAX_CHUNK_TOKENS, title: str | None = None, png: bool | None = None
) -> str:
    """The histogram for ``dg.MetadataValue.md``: the PNG as a Markdown image (base64 data URI)
    where matplotlib is installed (``png=None``), else :func:`token_histogram_table`.
    ``png=True`` / ``False`` chooses one."""
    if png is None:
        png = _have_matplotlib()
    if not png:
        return token_histogram_table(chunks, cap=cap, title=title)
    image = token_histogram_png(chunks, cap=cap, title=title)
    return f"![token sizes by chunk type](data:image/png;base64,{base64.b64encode(image).decode()})"


# whole-token bin edges of the table: finer where chunks usually are, one bin ending at the cap
_TABLE_EDGES = (1, 10, 20, 50, 100, 200, 300, 500, 800, 1000, 1200)
_BAR = 24  # characters of the longest bar


def token_histogram_table(chunks: pa.Table | Iterable[Chunk], cap: int = MAX_CHUNK_TOKENS, title: str | None = None) -> str:
    """Token sizes per chunk type as a Markdown table (no plotting library): one row per size
    bin (the last ones: up to the cap, over it), a bar, the total and a column per chunk type."""
    types, tokens = _types_and_tokens(chunks)
    present = _present_types(types)
    head = title or "token sizes by chunk type"
    if not tokens.size:
        return f"**{head}**: no chunks"
    pct = token_percentiles(tokens)
    over = int((tokens > cap).sum())
    lines = [
        f"**{head}**: {tokens.size:,} chunks · p50 {pct['p50']:,} · p95 {pct['p95']:,} · max {pct['max']:,} "
        f"· {over:,} over the {cap:,}-token cap",
        "",
        "| tokens | | chunks | " + " | ".join(present) + " |",
        "| ---: | :--- | ---: | " + " | ".join("---:" for _ in present) + " |",
    ]
    edges = [e for e in _TABLE_EDGES if e < cap] + [cap + 1]
    bins: list[tuple[int, int | None]] = [(lo, hi - 1) for lo, hi in zip(edges, edges[1:])]
    bins.insert(0, (0, 0))
    bins.append((cap + 1, None))
    arr_types = np.asarray(types, dtype=object)
    rows = []
    for lo, hi in bins:
        inside = (tokens >= lo) if hi is None else (tokens >= lo) & (tokens <= hi)
        rows.append(((lo, hi), int(inside.sum()), [int((inside & (arr_types == t)).sum()) for t in present]))
    top = max(n for _, n, _ in rows)
    for (lo, hi), n, per_type in rows:
        if not n and (lo == 0 or hi is None):
            continue  # empty-chunk and over-cap rows only when they have chunks
        label = f"> {cap:,}" if hi is None else (f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}")
        bar = "█" * max(1, round(_BAR * n / top)) if n else ""
        lines.append(f"| {label} | {bar} | {n:,} | " + " | ".join(f"{c:,}" if c else "" for c in per_type) + " |")
    return "\n".join(lines)


def _present_types(types: list[str]) -> list[str]:
    return sorted(set(types), key=lambda t: (_TYPE_ORDER.index(t) if t in _TYPE_ORDER else len(_TYPE_ORDER), t))


def _have_matplotlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def _palette() -> list[str]:
    from matplotlib import colormaps

    cmap = colormaps["tab20"]
    # tab20 pairs a strong and a light shade; strong shades first keeps neighbours distinct
    return [_hex(cmap(i)) for i in range(0, 20, 2)] + [_hex(cmap(i)) for i in range(1, 20, 2)]


def _hex(rgba: tuple[float, float, float, float]) -> str:
    return "#" + "".join(f"{round(x * 255):02x}" for x in rgba[:3])
