"""The registry of datasets and the per-partition steps (ingest, chunk, embed, staleness)
that tie readers, chunkers, warehouse and embedders together, as plain functions.

Imports ``core``, ``sources``, ``chunkers``, ``warehouse`` and ``embeddings``; never Dagster.
"""
