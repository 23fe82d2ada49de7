"""Civic records as cities publish them: agendas, minutes and transcripts without speaker labels.

Each module parses one thing out of a meeting record's text and returns char offsets into it,
so the civic reader can store the structure as blocks (``core.documents.Block``) and the civic
chunker cuts there without parsing again:

* ``votes``: motions (mover, seconder) and their vote lines (ayes, noes, abstentions, absent, result);
* ``speech``: captions and one-line transcripts cut into sentence-bounded segments, with their timestamps.
"""
