"""The redirect table's schema and the names the warehouse keeps it under.

The matching that fills it is :mod:`codex_pipeline.redirects`; the current-corpus index
writes its ``deleted`` rows, which is why the schema lives down here.
"""

from __future__ import annotations

import pyarrow as pa

DELETED = "deleted"
"""The match kind of an id whose document was retracted (see :mod:`codex_pipeline.warehouse.current`)."""

LAST_PUBLISHED = "chunks_last_published"
"""Where a day's published chunks wait while the partition is quarantined: the redirect baseline."""

REDIRECT_SCHEMA = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("partition_date", pa.date32(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("old_chunk_id", pa.string(), nullable=False),
        pa.field("old_section_id", pa.string(), nullable=False),
        pa.field("old_chunking_version", pa.string(), nullable=False),
        pa.field("new_chunk_id", pa.string(), nullable=True),  # null: the id is gone
        pa.field("new_section_id", pa.string(), nullable=True),
        pa.field("new_chunking_version", pa.string(), nullable=False),  # version this row was resolved against
        pa.field("match", pa.string(), nullable=False),  # content_hash | span_overlap | similar_text | removed | deleted
        pa.field("overlap", pa.float64(), nullable=True),  # span IoU (span_overlap) or word Jaccard (similar_text)
        pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),  # when the old id disappeared
    ]
)
