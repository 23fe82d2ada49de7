"""The vocabulary every layer shares: the chunk contract, ids, exact cl100k tokens,
splitting primitives, documents and chunk drafts/rows.

Imports nothing else from Codex (only the standard library, numpy, pyarrow, tiktoken,
pandera). Every other layer may import it.
"""
