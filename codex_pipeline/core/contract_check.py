"""The chunk contract as a pandera schema, with every row rule of the seed.

Rules that need the source documents (anchor spans inside the text, verbatim
slices equal to the chunk text) take the canonical texts by ``doc_id``.

The schema is the single declaration of what is checked; its rules run vectorized
on Arrow-backed columns, so checking a partition costs a fraction of chunking it
(``bench/bench_contract_check.py``). The exact cl100k recount, which would cost as
much as chunking, encodes each distinct word-like segment of the column once (see
:func:`exact_token_counts`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa_arrow
import pyarrow.compute as pc

from codex_pipeline.core.contract import CHUNK_TYPES, MAX_CHUNK_TOKENS
from codex_pipeline.core.ids import CHUNK_ID_PATTERN, make_chunk_id
from codex_pipeline.core.tokens import count_tokens, encoding

if TYPE_CHECKING:
    import pandas as pd
    import pandera.pandas as pa


def _minted_ids(df: pd.DataFrame) -> pd.Series:
    import pandas as pd
    minted = [make_chunk_id(d, s) for d, s in zip(df["doc_id"].tolist(), df["section_id"].tolist())]
    return df["chunk_id"] == pd.Series(minted, index=df.index)


def _exact_tokens(df: pd.DataFrame) -> pd.Series:
    import pandas as pd
    counts = exact_token_counts(_arrow_strings(df["chunk_text"]))
    return df["token_count"] == pd.Series(counts, index=df.index)


def _char_count(df: pd.DataFrame) -> pd.Series:
    return df["char_count"] == df["chunk_text"].str.len()


def _seq_dense(df: pd.DataFrame) -> pd.Series:
    """Per document, seq_index runs 0..n-1 in the order the rows are stored."""
    expected = df.groupby("doc_id", sort=False).cumcount()
    return df["seq_index"] == expected


def _parent_exists(df: pd.DataFrame) -> pd.Series:
    import pandas as pd
    parent = df["parent_chunk_id"]
    known = pd.MultiIndex.from_arrays([df["doc_id"], df["chunk_id"]])
    found = pd.MultiIndex.from_arrays([df["doc_id"], parent]).isin(known)
    return parent.isna() | (pd.Series(found, index=df.index) & (parent != df["chunk_id"]))


# The anchor every verbatim chunk gets from ``rows.evidence_anchor`` (its hot path), as
# JSON itself would read it: ints without leading zeros, small enough for int64.
_INT = r"(?:0|[1-9][0-9]{0,17})"
_VERBATIM_ANCHOR = rf'^\{{"page":(?:null|-?{_INT}),"char_span":\[(?P<start>{_INT}),(?P<end>{_INT})\]\}}$'


def _anchor_check(texts: Mapping[str, str] | None) -> Callable[[pd.DataFrame], pd.Series]:
    def check(df: pd.DataFrame) -> pd.Series:
        """Verbatim anchors in the hot-path format are read with one vectorized regex; others with json."""
        import pandas as pd
        spans = pc.extract_regex(_arrow_strings(df["evidence_anchor"]), _VERBATIM_ANCHOR)
        fast = spans.is_valid().to_numpy(zero_copy_only=False)
        starts, ends = (pc.if_else(fast, pc.struct_field(spans, f), "0").cast(pa_arrow.int64()).to_numpy() for f in ("start", "end"))
        ok = []
        for hot, doc_id, anchor, chunk_text, start, end in zip(
            fast.tolist(), df["doc_id"].tolist(), df["evidence_anchor"].tolist(), df["chunk_text"].tolist(),
            starts.tolist(), ends.tolist(),
        ):
            source = None if texts is None else texts.get(doc_id)
            if not hot:
                ok.append(_anchor_ok(anchor, chunk_text, source))
            elif start > end:
                ok.append(False)
            else:
                ok.append(source is None or (end <= len(source) and source[start:end] == chunk_text))
        return pd.Series(ok, index=df.index)

    return check


def _anchor_ok(anchor: str, chunk_text: str, source: str | None) -> bool:
    try:
        a = json.loads(anchor)
        start, end = a["char_span"]
        spans = a.get("spans") or [[start, end]]
    except (TypeError, ValueError, KeyError):
        return False
    if "page" not in a or not all(isinstance(x, int) for s in spans for x in s):
        return False
    if not 0 <= start <= end or any(not start <= s <= e <= end for s, e in spans):
        return False
    if source is None:
        return True
    if end > len(source):
        return False
    if "spans" not in a:  # verbatim chunk: the anchor must reproduce it exactly
        return source[start:end] == chunk_text
    return True


def chunk_schema(source_texts: Mapping[str, str] | None = None) -> pa.DataFrameSchema:
    """The contract; with ``source_texts`` it also verifies anchors against the sources."""
    import pandas as pd
    import pandera.pandas as pa  # on first use, as pandas: together 0.8 s of every run worker's import
    return pa.DataFrameSchema(
        {
            "chunk_id": pa.Column(str, pa.Check.str_matches(CHUNK_ID_PATTERN), unique=True),
            "doc_id": pa.Column(str, pa.Check.str_matches(r"^urn:aprs:[a-z0-9_]+:.+$")),
            "section_id": pa.Column(str, pa.Check.str_length(min_value=1)),
            "chunk_text": pa.Column(str, pa.Check.str_length(min_value=1)),
            "chunk_type": pa.Column(str, pa.Check.isin(sorted(CHUNK_TYPES))),
            "token_count": pa.Column("int32", [pa.Check.ge(1), pa.Check.le(MAX_CHUNK_TOKENS)]),
            "char_count": pa.Column("int32", pa.Check.ge(1)),
            "seq_index": pa.Column("int32", pa.Check.ge(0)),
            "parent_chunk_id": pa.Column(str, pa.Check.str_matches(CHUNK_ID_PATTERN), nullable=True),
            "evidence_anchor": pa.Column(str),
            "embedding_model": pa.Column(str, nullable=True),
            "embedding_version": pa.Column(str, nullable=True),
            "chunked_at": pa.Column(pd.DatetimeTZDtype("us", "UTC"), nullable=False),
            "chunking_version": pa.Column(str, pa.Check.str_length(min_value=1)),
        },
        checks=[
            pa.Check(_minted_ids, name="chunk_id_minted_from_doc_and_section"),
            pa.Check(_exact_tokens, name="token_count_exact_cl100k"),
            pa.Check(_char_count, name="char_count_is_len"),
            pa.Check(_seq_dense, name="seq_index_dense_in_reading_order"),
            pa.Check(_parent_exists, name="parent_in_same_document"),
            pa.Check(_anchor_check(source_texts), name="evidence_anchor_valid"),
        ],
        strict=False,
        coerce=False,
    )


@dataclass
class ContractReport:
    """What the contract found in a partition (or one row group of it).

    A failure tied to rows condemns their documents, not the day: ``rejected_documents``
    names each with the rules its chunks failed, and the chunks step publishes the day
    without them. Only a failure no row can be blamed for (a column of the wrong type)
    makes the partition unpublishable (``unattributed``).
    """

    rows: int
    failures: list[dict[str, Any]] = field(default_factory=list)  # one per (check, column) with examples
    rejected_documents: dict[str, list[str]] = field(default_factory=dict)  # doc_id -> the rules its chunks failed
    unattributed: list[str] = field(default_factory=list)  # rules failed with no row to blame
    row_rules: dict[int, list[str]] = field(default_factory=dict, repr=False, compare=False)
    """Row position -> rules it failed, in the table checked (not kept by :meth:`merge`)."""

    @property
    def passed(self) -> bool:
        """Every row met every rule."""
        return not self.failures

    @property
    def publishable(self) -> bool:
        """The partition may be published (without its :attr:`rejected_documents`)."""
        return not self.unattributed

    @property
    def failed_checks(self) -> list[str]:
        """Names of the checks with at least one failure, sorted, each once."""
        return sorted({f["check"] for f in self.failures})

    @classmethod
    def merge(cls, reports: Iterable[ContractReport]) -> ContractReport:
        """One report for a partition checked in row groups: counts summed, at most 5 examples per rule."""
        out = cls(rows=0)
        by_rule: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
        for report in reports:
            out.rows += report.rows
            for doc, rules in report.rejected_documents.items():
                out.rejected_documents[doc] = sorted({*out.rejected_documents.get(doc, []), *rules})
            out.unattributed = sorted({*out.unattributed, *report.unattributed})
            for f in report.failures:
                key = (f["check"], tuple(f["columns"]))
                if key not in by_rule:
                    by_rule[key] = {**f, "example_chunk_ids": list(f["example_chunk_ids"]),
                                    "example_doc_ids": list(f.get("example_doc_ids", []))}
                    out.failures.append(by_rule[key])
                    continue
                merged = by_rule[key]
                merged["failures"] += f["failures"]
                merged["example_chunk_ids"] = (merged["example_chunk_ids"] + list(f["example_chunk_ids"]))[:5]
                merged["example_doc_ids"] = list(dict.fromkeys(
                    merged["example_doc_ids"] + list(f.get("example_doc_ids", []))))[:5]
        return out


def to_frame(chunks: pa_arrow.Table) -> pd.DataFrame:
    """Arrow chunk table as pandas; strings stay Arrow-backed (pandas' ``str`` dtype), nulls are NaN.

    Arrow-backed strings keep the column checks vectorized and let the token check read
    the UTF-8 buffers without copying them.
    """
    return chunks.to_pandas()


def validate_chunks(chunks: pa_arrow.Table, source_texts: Mapping[str, str] | None = None) -> ContractReport:
    """Run the contract lazily and summarize every failing rule, with the rows and documents that failed it."""
    import pandera.pandas as pa  # on first use, as pandas: together 0.8 s of every run worker's import
    df = to_frame(chunks)
    report = ContractReport(rows=len(df))
    if df.empty:
        return report
    try:
        chunk_schema(source_texts).validate(df, lazy=True)
    except pa.errors.SchemaErrors as err:
        _report_failures(report, df, err.failure_cases)
    return report


def _report_failures(report: ContractReport, df: pd.DataFrame, fc: pd.DataFrame) -> None:
    """Fill ``report`` from pandera's failure cases: per rule, per row and per document."""
    import pandas as pd
    for check, group in fc.groupby("check", sort=True):
        columns = sorted({str(c) for c in group["column"].dropna()})
        columns = columns if len(columns) == 1 else []  # a dataframe-wide rule lists every column: name none
        rule = f"{columns[0]}: {check}" if columns and columns[0] != str(check) else str(check)
        rows = [int(i) for i in pd.unique(group["index"].dropna()) if i in df.index]
        if not rows:  # a column of the wrong type, a missing column: no row to blame
            report.unattributed = sorted({*report.unattributed, rule})
        for i in rows:
            report.row_rules.setdefault(i, []).append(rule)
            doc = df.loc[i, "doc_id"]
            doc = "" if pd.isna(doc) else str(doc)
            report.rejected_documents[doc] = sorted({*report.rejected_documents.get(doc, []), rule})
        report.failures.append(
            {
                "check": str(check),
                "columns": columns,
                "failures": len(rows) if rows else int(len(group)),
                "example_chunk_ids": [str(df.loc[i, "chunk_id"]) for i in rows[:5]],
                "example_doc_ids": list(dict.fromkeys(str(df.loc[i, "doc_id"]) for i in rows))[:5],
            }
        )


# -- exact token counts of a column ---------------------------------------------------
#
# cl100k splits text into pieces with a regex and runs BPE inside each piece. Two kinds
# of cut are always piece boundaries: before a space that follows a printable ASCII
# character (no piece holds a non-space and then a space), and after a newline that a
# printable ASCII character follows (no piece holds a newline and then a non-space).
# The text on either side of such a cut also splits on its own exactly as it did inside
# the whole: the pattern looks behind nowhere, its one lookahead (``\s+(?!\S)``) never
# decides a piece that touches the cut, and ``\s++$``, which can only apply to a left
# part ending in a newline, takes the same trailing whitespace run there that
# ``\s*[\r\n]`` takes inside the whole. So a text's count is the sum of the counts of
# its segments between such cuts: the rule of ``TokenizedText``'s safe boundaries,
# decided on characters instead of tokens. Segments are mostly words, which repeat: each
# distinct one is encoded once, all in one tiktoken call. ``test_contract_check``
# compares the result with ``encode_ordinary`` on every sample file, slices of them and
# random text.


def _arrow_strings(values: pd.Series | pa_arrow.Array | pa_arrow.ChunkedArray) -> pa_arrow.LargeStringArray:
    """One contiguous ``large_string`` array (zero-copy for an Arrow-backed column), nulls as ""."""
    arr = values if isinstance(values, pa_arrow.Array | pa_arrow.ChunkedArray) else pa_arrow.array(values)
    if isinstance(arr, pa_arrow.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type != pa_arrow.large_string():
        arr = arr.cast(pa_arrow.large_string())
    return pc.fill_null(arr, "") if arr.null_count else arr


def _utf8(arr: pa_arrow.LargeStringArray) -> tuple[np.ndarray, np.ndarray]:
    """The strings' UTF-8 bytes back to back, and the offset of each string in them (plus the end)."""
    n = len(arr)
    if not n:
        return np.zeros(0, np.uint8), np.zeros(1, np.int64)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = arr.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    return raw[offsets[0] : offsets[-1]], offsets - offsets[0]


def _printable(b: np.ndarray) -> np.ndarray:
    """ASCII ``!``..``~``: never whitespace, never part of a multi-byte character."""
    return (b - np.uint8(0x21)) < np.uint8(0x5E)  # uint8 arithmetic wraps below 0x21


def exact_token_counts(texts: pa_arrow.Array | pa_arrow.ChunkedArray | pd.Series) -> np.ndarray:
    """Exact cl100k ``encode_ordinary`` counts of many texts (nulls count as empty)."""
    data, offsets = _utf8(_arrow_strings(texts))
    m = len(data)
    starts = np.zeros(m + 1, dtype=bool)  # segment starts: every text start and every safe cut
    if m > 1:
        printable = _printable(data)
        np.logical_and(data[1:] == 0x20, printable[:-1], out=starts[1:m])
        starts[1:m] |= (data[:-1] == 0x0A) & printable[1:]
    starts[offsets] = True
    cuts = np.flatnonzero(starts)  # ends with m, the end of the last text
    segments = pa_arrow.LargeStringArray.from_buffers(
        len(cuts) - 1, pa_arrow.py_buffer(cuts.astype(np.int64, copy=False)), pa_arrow.py_buffer(data)
    )
    distinct = segments.dictionary_encode()
    per_segment = _distinct_counts(distinct.dictionary)[distinct.indices.to_numpy()]
    total = np.zeros(len(cuts), dtype=np.int64)
    np.cumsum(per_segment, out=total[1:])
    first = np.searchsorted(cuts, offsets)  # each text's first segment (texts start at cuts)
    return total[first[1:]] - total[first[:-1]]


def _distinct_counts(segments: pa_arrow.LargeStringArray) -> np.ndarray:
    """Counts of distinct segments: all that can sit between safe cuts in one encode call, the rest one by one."""
    data, offsets = _utf8(segments)
    counts = np.zeros(len(segments), dtype=np.int64)
    if not len(segments):
        return counts
    head, tail = data[offsets[:-1]], data[offsets[1:] - 1]
    lead_space, lead_printable = head == 0x20, _printable(head)
    tail_printable, tail_newline = _printable(tail), tail == 0x0A
    rest = np.flatnonzero(~((lead_space | lead_printable) & (tail_printable | tail_newline)))
    counts[rest] = [count_tokens(t) for t in segments.take(rest).to_pylist()]  # only a text's first or last segment
    # " word" segments chain with no filler; then newline-ended lines, printable-led words, space-led lines
    kinds = ((lead_space, tail_printable), (lead_printable, tail_newline), (lead_printable, tail_printable), (lead_space, tail_newline))
    order = np.concatenate([np.flatnonzero(lead & tail) for lead, tail in kinds])
    if len(order):
        counts[order] = _counts_in_one_call(segments.take(order), lead_space[order], tail_printable[order])
    return counts


def _counts_in_one_call(
    segments: pa_arrow.LargeStringArray, lead_space: np.ndarray, tail_printable: np.ndarray
) -> np.ndarray:
    """Encode the segments back to back in one text, with a safe cut at every segment edge, and count inside each.

    Each segment starts with a space or a printable character and ends with a printable
    character or a newline. Where two neighbours would not meet at a safe cut, a filler
    goes between them: `` x`` and a newline after a printable end that a printable start
    follows, an ``x`` before a space start that a newline end precedes. Tokens then never
    cross a segment's edges; that is verified, and any doubt falls back to one encode
    per segment.
    """
    lead_printable = ~lead_space
    tail_newline = ~tail_printable
    suffix = np.zeros(len(segments), dtype=bool)
    suffix[:-1] = tail_printable[:-1] & lead_printable[1:]
    prefix = np.zeros(len(segments), dtype=bool)
    prefix[1:] = tail_newline[:-1] & lead_space[1:]

    def text(value: str) -> pa_arrow.Scalar:
        return pa_arrow.scalar(value, pa_arrow.large_string())

    units = pc.binary_join_element_wise(
        pc.if_else(prefix, text("x"), text("")), segments, pc.if_else(suffix, text(" x\n"), text("")), text("")
    )
    data, offsets = _utf8(units)
    begin = offsets[:-1] + prefix
    end = begin + np.diff(_utf8(segments)[1])
    # encode_to_numpy with no special token allowed or disallowed is encode_ordinary
    tokens = encoding().encode_to_numpy(data.tobytes().decode("utf-8"), allowed_special=set(), disallowed_special=())
    token_starts = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(_token_sizes(tokens), out=token_starts[1:])
    i, j = np.searchsorted(token_starts, begin), np.searchsorted(token_starts, end)
    if np.array_equal(token_starts[i], begin) and np.array_equal(token_starts[j], end):
        return j - i
    return np.array([count_tokens(t) for t in segments.to_pylist()], dtype=np.int64)  # pragma: no cover - a broken rule


@functools.lru_cache(maxsize=1)
def _size_table() -> np.ndarray:
    """Bytes per token id, filled in as ids are met (-1: not looked up yet)."""
    return np.full(encoding().max_token_value + 1, -1, dtype=np.int64)


def _token_sizes(tokens: np.ndarray) -> np.ndarray:
    """UTF-8 bytes of each token, decoding only ids this process has not met before."""
    table = _size_table()
    sizes: np.ndarray = table[tokens]
    if (sizes < 0).any():
        new = np.unique(tokens[sizes < 0])
        table[new] = np.fromiter(map(len, encoding().decode_tokens_bytes(new.tolist())), np.int64, len(new))
        sizes = table[tokens]
    return sizes
