"""The registry of datasets and the building blocks around it: row transforms (documents to
``raw`` rows and back, chunking a batch of documents, rejects as rows), which materialized
partitions are stale, and the address validator.

The day steps themselves (what is read and written, in which order) are in
``codex_pipeline.pipeline``. Imports ``core``, ``sources``, ``chunkers``, ``warehouse`` and
``retrieval``; never Dagster.
"""
