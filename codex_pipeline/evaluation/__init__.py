"""Retrieval evaluation: gold questions with exact character spans, scored on what ``Retriever`` returns.

``codex eval`` lands a corpus, materializes it (the CLI does that through Dagster),
then :func:`~.runner.evaluate` runs every gold question and scores the top-k hits'
spans, mapped from each document's canonical text back to the source files
(:mod:`.source_map`), by character-level recall, precision, IoU and hit@k
(:mod:`.metrics`).

Imports ``core``, ``sources``, ``warehouse``, ``embeddings``, ``retrieval`` and
``datasets``; never Dagster (the CLI passes the materialization in).
"""
