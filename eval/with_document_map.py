"""Run an eval script or ``codex`` with PDFs' gold text from ``evaluation.document_map`` (until the hook lands).

``evaluation.gold.read_source`` reads a PDF's bytes as UTF-8; gold over a PDF counts in the
``documents`` reader's canonical text instead. This patches ``read_source`` (in ``gold`` and
``runner``) to return :func:`document_source` for a PDF or DOCX, then runs the target:

    python eval/with_document_map.py eval/make_gold.py ../shared/corpora eval/pdf.questions.jsonl > eval/pdf.gold.jsonl
    python eval/with_document_map.py eval/check_gold.py ../shared/corpora eval/pdf.gold.jsonl
    python eval/with_document_map.py codex eval eval/pdf.gold.jsonl --corpus ../shared/corpora --dataset documents=pdf ...
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import codex_pipeline.evaluation.gold as gold
import codex_pipeline.evaluation.runner as runner
from codex_pipeline.evaluation.document_map import document_source

_plain = gold.read_source


def read_source(path: Path) -> str:
    text = document_source(path)
    return text if text is not None else _plain(path)


gold.read_source = read_source
runner.read_source = read_source

if __name__ == "__main__":
    target, sys.argv = sys.argv[1], sys.argv[1:]
    if target == "codex":
        from codex_pipeline.cli import main

        sys.exit(main())
    sys.path.insert(0, str(Path(__file__).parent))
    runpy.run_path(target, run_name="__main__")
