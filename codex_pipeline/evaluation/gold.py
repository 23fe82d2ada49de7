"""Gold files: one JSON object a line, ``{"question": …, "references": [{"source", "start", "end"}]}``.

Offsets index the source file's text *as read*: UTF-8 (a BOM dropped, undecodable
bytes replaced by U+FFFD) with newlines normalized to ``\\n`` (:func:`read_source`),
which is what Codex's readers and Python's text mode both produce for these files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from codex_pipeline.evaluation.document_map import document_source


class GoldError(ValueError):
    """A gold line Codex cannot score; the message names the file, the line and the fix."""


@dataclass(frozen=True)
class Reference:
    """Characters ``[start, end)`` of ``source``'s text as :func:`read_source` reads it."""

    source: str  # path relative to the corpus folder, with "/" separators
    start: int
    end: int


@dataclass(frozen=True)
class Question:
    """A gold question; ``line``: its 1-based line in the gold file."""

    line: int
    question: str
    references: tuple[Reference, ...]


def read_source(path: Path) -> str:
    """A source file's text as gold offsets count it (a PDF's or DOCX's: the documents reader's)."""
    if (text := document_source(path)) is not None:
        return text
    return path.read_bytes().decode("utf-8-sig", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def load_gold(path: Path, corpus: Path) -> list[Question]:
    """Every question of ``path``, each reference checked against the file it names under ``corpus``."""
    texts: dict[str, int] = {}
    out: list[Question] = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        where = f"{path}:{n}"
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise GoldError(f"{where}: not JSON ({exc.msg}): write one JSON object per line") from exc
        question = obj.get("question") if isinstance(obj, dict) else None
        refs = obj.get("references") if isinstance(obj, dict) else None
        if not isinstance(question, str) or not question.strip():
            raise GoldError(f'{where}: missing "question": give each line a non-empty question string')
        if not isinstance(refs, list) or not refs:
            raise GoldError(f'{where}: "references" must be a non-empty list of {{"source", "start", "end"}}')
        parsed = []
        for k, ref in enumerate(refs, 1):
            parsed.append(_reference(ref, f"{where} reference {k}", corpus, texts))
        out.append(Question(n, question.strip(), tuple(parsed)))
    if not out:
        raise GoldError(f"{path}: no questions: write one JSON object per line")
    return out


def _reference(ref: object, where: str, corpus: Path, lengths: dict[str, int]) -> Reference:
    if not isinstance(ref, dict):
        raise GoldError(f'{where}: expected an object {{"source", "start", "end"}}')
    source, start, end = ref.get("source"), ref.get("start"), ref.get("end")
    if not isinstance(source, str) or not source:
        raise GoldError(f'{where}: "source" must be a path relative to the corpus folder {corpus}')
    if not isinstance(start, int) or not isinstance(end, int) or not 0 <= start < end:
        raise GoldError(f'{where}: "start" and "end" must be integers with 0 <= start < end (got {start!r}, {end!r})')
    source = Path(source).as_posix()
    if source not in lengths:
        file = corpus / source
        if not file.is_file():
            raise GoldError(f"{where}: source {source!r} is not a file under {corpus}: fix the path or --corpus")
        lengths[source] = len(read_source(file))
    if end > lengths[source]:
        raise GoldError(f"{where}: end {end} is past the end of {source} ({lengths[source]} characters as read)")
    return Reference(source, start, end)
