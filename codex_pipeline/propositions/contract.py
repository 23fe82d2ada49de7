"""The propositions contract as a pandera schema: what the blocking asset check runs.

Row rules that need the partition's chunks and documents (parents exist, spans lie
inside the canonical text, an offline statement is exactly its slices) take them as
arguments, as the chunk contract takes the source texts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import pyarrow as pa_arrow

from codex_pipeline.core.contract_check import ContractReport, exact_token_counts
from codex_pipeline.core.ids import CHUNK_ID_PATTERN
from codex_pipeline.propositions.base import JOIN
from codex_pipeline.propositions.table import make_proposition_id, spans_of

if TYPE_CHECKING:
    import pandas as pd
    import pandera.pandas as pa

OFFLINE = "offline"


def _minted(df: pd.DataFrame) -> pd.Series:
    import pandas as pd
    minted = [make_proposition_id(p, int(o)) for p, o in zip(df["parent_chunk_id"], df["ordinal"])]
    return df["proposition_id"] == pd.Series(minted, index=df.index)


def _exact_tokens(df: pd.DataFrame) -> pd.Series:
    import pandas as pd
    return df["token_count"] == pd.Series(exact_token_counts(pa_arrow.array(df["text"].tolist(), pa_arrow.large_string())), index=df.index)


def _ordinals_dense(df: pd.DataFrame) -> pd.Series:
    return df["ordinal"] == df.groupby("parent_chunk_id", sort=False).cumcount()


def _parents(parents: Mapping[str, str] | None) -> Callable[[pd.DataFrame], pd.Series]:
    def check(df: pd.DataFrame) -> pd.Series:
        import pandas as pd
        if parents is None:
            return pd.Series(True, index=df.index)
        return pd.Series([parents.get(p) == d for p, d in zip(df["parent_chunk_id"], df["doc_id"])], index=df.index)

    return check


def _spans(texts: Mapping[str, str] | None) -> Callable[[pd.DataFrame], pd.Series]:
    """Spans lie in the document; null only for an LLM statement; an offline statement is its slices joined."""

    def check(df: pd.DataFrame) -> pd.Series:
        import pandas as pd
        ok = []
        for doc_id, text, raw, extractor, score in zip(df["doc_id"], df["text"], df["spans"], df["extractor"], df["alignment_score"]):
            spans = spans_of(list(raw)) if raw is not None and not (isinstance(raw, float) and pd.isna(raw)) else None
            if spans is None:
                ok.append(extractor != OFFLINE)
                continue
            source = None if texts is None else texts.get(doc_id)
            good = bool(spans) and all(0 <= s < e and (source is None or e <= len(source)) for s, e in spans)
            good = good and not pd.isna(score)
            if good and extractor == OFFLINE and source is not None:
                good = JOIN.join(source[s:e] for s, e in spans) == text
            ok.append(good)
        return pd.Series(ok, index=df.index)

    return check


def propositions_schema(
    parents: Mapping[str, str] | None = None, texts: Mapping[str, str] | None = None
) -> pa.DataFrameSchema:
    """The contract; ``parents`` (chunk id -> doc id) and ``texts`` (doc id -> canonical text) enable the row rules."""
    import pandas as pd
    import pandera.pandas as pa  # on first use, as pandas: together 0.8 s of every run worker's import
    return pa.DataFrameSchema(
        {
            "proposition_id": pa.Column(str, pa.Check.str_matches(CHUNK_ID_PATTERN), unique=True),
            "parent_chunk_id": pa.Column(str, pa.Check.str_matches(CHUNK_ID_PATTERN)),
            "doc_id": pa.Column(str, pa.Check.str_matches(r"^urn:aprs:[a-z0-9_]+:.+$")),
            "ordinal": pa.Column("int32", pa.Check.ge(0)),
            "text": pa.Column(str, pa.Check.str_length(min_value=1)),
            "token_count": pa.Column("int32", pa.Check.ge(1)),
            "alignment_score": pa.Column(float, [pa.Check.ge(0.0), pa.Check.le(1.0)], nullable=True),
            "extractor": pa.Column(str, pa.Check.str_length(min_value=1)),
            "extractor_version": pa.Column(str, pa.Check.str_length(min_value=1)),
            "prompt_version": pa.Column(str, pa.Check.str_length(min_value=1)),
            "created_at": pa.Column(pd.DatetimeTZDtype("us", "UTC")),
        },
        checks=[
            pa.Check(_minted, name="proposition_id_minted_from_parent_and_ordinal"),
            pa.Check(_exact_tokens, name="token_count_exact_cl100k"),
            pa.Check(_ordinals_dense, name="ordinal_dense_per_parent"),
            pa.Check(_parents(parents), name="parent_chunk_in_partition_same_document"),
            pa.Check(_spans(texts), name="spans_valid"),
        ],
        strict=False,
        coerce=False,
    )


def validate_propositions(
    table: pa_arrow.Table, parents: Mapping[str, str] | None = None, texts: Mapping[str, str] | None = None
) -> ContractReport:
    """Run the contract lazily; one failure entry per rule with example proposition ids."""
    import pandas as pd
    import pandera.pandas as pa  # on first use, as pandas: together 0.8 s of every run worker's import
    df = table.to_pandas()
    report = ContractReport(rows=len(df))
    if df.empty:
        return report
    try:
        propositions_schema(parents, texts).validate(df, lazy=True)
    except pa.errors.SchemaErrors as err:
        fc = err.failure_cases
        for check, group in fc.groupby("check", sort=True):
            rows = pd.unique(group["index"].dropna())
            examples = [str(df.loc[i, "proposition_id"]) for i in rows[:5] if i in df.index]
            report.failures.append(
                {"check": str(check), "failures": int(len(rows)) if len(rows) else int(len(group)), "example_proposition_ids": examples}
            )
    return report
