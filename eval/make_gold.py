"""Turn hand-written questions with quoted evidence into a gold file of exact offsets.

Input (``*.questions.jsonl``), written by reading the text::

    {"question": "…", "source": "<path under the corpus>",
     "refs": ["an exact passage", ["first words of a passage", "its last words"],
              {"source": "<another file>", "ref": "a passage there"}, …]}

A string is one passage; a pair is the stretch from the first phrase to the end of
the second (for evidence spanning several lines or transcript turns); an object cites
another file than the question's ``source``. Phrases match the source file's text as
read (:func:`read_source`, the canonical text Codex's readers produce) with any run of
whitespace between words; the first match at or after the previous reference's start
in the same file is used, so repeated phrases resolve in reading order.

Each found stretch is then cut around metadata lines (:mod:`goldlib`: transcript turn
headers, ``Text:`` labels, caption time stamps), so a reference holds only the words
that answer. Prints one gold line per question, or stops at the first phrase that is
not found, naming it.

    python eval/make_gold.py ../shared/corpora eval/council.questions.jsonl > eval/council.gold.jsonl
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from goldlib import evidence_pieces, metadata_ranges

from codex_pipeline.evaluation.gold import read_source

# between two words: whitespace, a transcript block boundary (a passage read across turns),
# or a caption file's time stamp line
GAP = (r"(?:\s*\n-{3,}\n[^\n]*:\nStart:[^\n]*\nEnd:[^\n]*\nDuration:[^\n]*\nText:\s*"
       r"|\s*\n\[\d{1,2}:\d{2}:\d{2}\]\n\s*|\s+)")


def find(text: str, phrase: str, start: int = 0) -> tuple[int, int] | None:
    """The first match of ``phrase`` (whitespace-flexible) at or after ``start``, else anywhere."""
    pattern = re.compile(GAP.join(re.escape(w) for w in phrase.split()))
    m = pattern.search(text, start) or pattern.search(text)
    return (m.start(), m.end()) if m else None


def main(corpus: Path, questions: Path) -> int:
    texts: dict[str, tuple[str, list[tuple[int, int]]]] = {}
    for n, line in enumerate(questions.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        q = json.loads(line)
        refs: list[dict[str, object]] = []
        at: dict[str, int] = {}
        for ref in q["refs"]:
            src = q["source"]
            if isinstance(ref, dict):
                src, ref = ref["source"], ref["ref"]
            if src not in texts:
                text = read_source(corpus / src)
                texts[src] = (text, metadata_ranges(text))
            text, meta = texts[src]
            first, last = (ref, None) if isinstance(ref, str) else (ref[0], ref[-1] if len(ref) > 1 else None)
            a = find(text, first, at.get(src, 0))
            b = find(text, last, a[0]) if a and last else a
            if a is None or b is None or b[1] <= a[0]:
                print(f"{questions}:{n}: passage not found in {src}: {ref!r}", file=sys.stderr)
                return 1
            refs += [{"source": src, "start": s, "end": e} for s, e in evidence_pieces(text, a[0], b[1], meta)]
            at[src] = a[0]
        print(json.dumps({"question": q["question"], "references": refs}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
