"""Where a chunk id went after its partition was re-chunked: the matcher and its compiled loops.

:mod:`.matching` decides each vanished id's target and merges the stored table;
:mod:`.wordsets` and :mod:`.word_kernels` score edited text. The reference matcher the
tests compare against lives in ``codex_pipeline_tests.redirect_reference``.
"""
