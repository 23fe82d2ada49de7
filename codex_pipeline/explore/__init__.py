"""Reading chunk tables back: collections with navigation, the inspector, summary
statistics. Imports ``core`` and ``warehouse``.
"""
