"""Check a gold file span by span: offsets in the file, no metadata inside, no cut words.

Reads every reference's ``text[start:end]`` from the canonical text of its file
(:func:`read_source`: UTF-8, BOM dropped, CRLF/CR → LF, as Codex's readers produce),
and fails (exit 1, one line per problem) when a span runs past its file, holds a
metadata line (:mod:`goldlib`), starts or ends inside a word, or has surrounding
whitespace. ``--show`` prints each question with its evidence.

    python eval/check_gold.py ../shared/corpora eval/uv.gold.jsonl [--show]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from goldlib import metadata_ranges

from codex_pipeline.evaluation.gold import read_source


def problems(text: str, s: int, e: int, meta: list[tuple[int, int]]) -> list[str]:
    out = []
    if not 0 <= s < e <= len(text):
        return [f"offsets {s}:{e} outside the file ({len(text)} characters)"]
    span = text[s:e]
    if span != span.strip():
        out.append("leading or trailing whitespace")
    if any(m0 < e and m1 > s for m0, m1 in meta):
        out.append("holds a metadata line")
    if s > 0 and text[s - 1].isalnum() and text[s].isalnum():
        out.append(f"starts inside a word: …{text[max(0, s - 10):s + 10]!r}")
    if e < len(text) and text[e - 1].isalnum() and text[e].isalnum():
        out.append(f"ends inside a word: {text[e - 10:e + 10]!r}…")
    return out


def main(corpus: Path, gold: Path, show: bool) -> int:
    texts: dict[str, tuple[str, list[tuple[int, int]]]] = {}
    bad = n = 0
    for line_no, line in enumerate(gold.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        q = json.loads(line)
        n += 1
        if show:
            print(f"{line_no}. {q['question']}")
        for r in q["references"]:
            if r["source"] not in texts:
                text = read_source(corpus / r["source"])
                texts[r["source"]] = (text, metadata_ranges(text))
            text, meta = texts[r["source"]]
            for p in problems(text, r["start"], r["end"], meta):
                bad += 1
                print(f"{gold}:{line_no}: {r['source']} {r['start']}:{r['end']}: {p}")
            if show:
                print(f"   [{r['source']} {r['start']}:{r['end']}] {text[r['start']:r['end']]!r}")
    print(f"{gold}: {n} questions, {bad} problem(s)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]), "--show" in sys.argv[3:]))
