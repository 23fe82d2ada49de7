"""The chunk contract as a pandera schema, with every row rule of the seed.

Rules that need the source documents (anchor spans inside the text, verbatim
slices equal to the chunk text) take the canonical texts by ``doc_id``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd
import pandera.pandas as pa
import pyarrow as pa_arrow

from codex_pipeline.core.contract import CHUNK_TYPES, MAX_CHUNK_TOKENS
from codex_pipeline.core.ids import CHUNK_ID_PATTERN, make_chunk_id
from codex_pipeline.core.tokens import count_tokens_batch


def _minted_ids(df: pd.DataFrame) -> pd.Series:
    minted = [make_chunk_id(d, s) for d, s in zip(df["doc_id"], df["section_id"])]
    return df["chunk_id"] == pd.Series(minted, index=df.index)


def _exact_tokens(df: pd.DataFrame) -> pd.Series:
    counts = count_tokens_batch(df["chunk_text"].tolist())
    return df["token_count"] == pd.Series(counts, index=df.index)


def _char_count(df: pd.DataFrame) -> pd.Series:
    return df["char_count"] == df["chunk_text"].str.len()


def _seq_dense(df: pd.DataFrame) -> pd.Series:
    """Per document, seq_index runs 0..n-1 in the order the rows are stored."""
    expected = df.groupby("doc_id", sort=False).cumcount()
    return df["seq_index"] == expected


def _parent_exists(df: pd.DataFrame) -> pd.Series:
    known = set(zip(df["doc_id"], df["chunk_id"]))
    ok = [
        p is None or (isinstance(p, float) and pd.isna(p)) or (p != c and (d, p) in known)
        for d, c, p in zip(df["doc_id"], df["chunk_id"], df["parent_chunk_id"])
    ]
    return pd.Series(ok, index=df.index)


def _anchor_check(texts: Mapping[str, str] | None):
    def check(df: pd.DataFrame) -> pd.Series:
        ok = []
        for doc_id, anchor, chunk_text in zip(df["doc_id"], df["evidence_anchor"], df["chunk_text"]):
            ok.append(_anchor_ok(anchor, chunk_text, None if texts is None else texts.get(doc_id)))
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
    rows: int
    failures: list[dict] = field(default_factory=list)  # one per (check, column) with examples

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def failed_checks(self) -> list[str]:
        return sorted({f["check"] for f in self.failures})


def to_frame(chunks: pa_arrow.Table) -> pd.DataFrame:
    """Arrow chunk table as pandas with object strings and nullable parents kept as None."""
    df = chunks.to_pandas(types_mapper={pa_arrow.large_string(): pd.StringDtype("python")}.get)
    for col in ("chunk_id", "doc_id", "section_id", "chunk_text", "chunk_type", "parent_chunk_id",
                "evidence_anchor", "embedding_model", "embedding_version", "chunking_version"):
        if col in df:
            df[col] = df[col].astype(object).where(df[col].notna(), None)
    return df


def validate_chunks(chunks: pa_arrow.Table, source_texts: Mapping[str, str] | None = None) -> ContractReport:
    """Run the contract lazily and summarize every failing rule with a few examples."""
    df = to_frame(chunks)
    report = ContractReport(rows=len(df))
    if df.empty:
        return report
    try:
        chunk_schema(source_texts).validate(df, lazy=True)
    except pa.errors.SchemaErrors as err:
        fc = err.failure_cases
        for check, group in fc.groupby("check", sort=True):
            rows = pd.unique(group["index"].dropna())
            columns = sorted({str(c) for c in group["column"].dropna()})
            examples = [str(df.loc[i, "chunk_id"]) for i in rows[:5] if i in df.index]
            report.failures.append(
                {
                    "check": str(check),
                    "columns": columns if len(columns) == 1 else [],
                    "failures": int(len(rows)) if len(rows) else int(len(group)),
                    "example_chunk_ids": examples,
                }
            )
    return report
