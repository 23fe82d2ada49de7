"""A step's log: messages go to the caller's logger as they happen and are kept for the result."""

import logging

from codex_pipeline.pipeline.results import StepLog

_LOG = logging.getLogger("codex_pipeline.pipeline")


class Recorder:
    """Forwards to a :class:`StepLog` and remembers every warning and error.

    A step logs while it works (a damaged file is worth knowing about before a long
    chunk run ends) and also returns what it warned about, so a caller without a
    logger, such as a test, still sees it.
    """

    def __init__(self, log: StepLog | None = None) -> None:
        self._log: StepLog = log if log is not None else _LOG
        self.warnings: list[str] = []

    def info(self, msg: str) -> None:
        """Forwarded only: not kept."""
        self._log.info(msg)

    def warning(self, msg: str) -> None:
        """Forwarded and kept in ``warnings``."""
        self.warnings.append(msg)
        self._log.warning(msg)

    def error(self, msg: str) -> None:
        """Forwarded at error level; kept in ``warnings`` too, which holds all at warning level or above."""
        self.warnings.append(msg)
        self._log.error(msg)
