"""Landing readers: one module (or subpackage) per landing format.

A reader turns a landing day folder into validated ``SourceDocument``s (the canonical
text plus the structure it parsed: blocks and xpaths) and ``Reject``s. Imports only
``core``; never a chunker, the warehouse or Dagster.
"""
