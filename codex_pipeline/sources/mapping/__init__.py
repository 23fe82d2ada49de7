"""Declarative source mappings: a YAML file maps a city's CSV / JSON export onto a record kind.

``schema`` parses and validates a mapping file, ``reader`` turns the export's rows into
records of the kind's schema (rejecting a file whose header does not match), ``kinds``
gives each kind its validation, canonical text and loader. The row features users' exports need
live beside them, called from ``features`` (one place): ``blocks`` (repeated column blocks),
``filters`` (row filters), ``points`` (point columns), ``epochs`` (epoch dates) and
``duplicates`` (last-wins / merge of rows sharing an id, after validation). ``docs/datasets/mappings.md``
is the user's guide.
"""
