"""Storage: atomic Parquet files per (dataset, table, day), the DuckDB catalog of
views, and the redirect table. Imports only ``core``.
"""
