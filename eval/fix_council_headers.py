"""Trim council gold spans to the spoken words (issue 26): drop turn headers from every reference.

The first council gold counted each turn's ``Name:`` / ``Start:`` / ``End:`` /
``Duration:`` / ``Text:`` lines as evidence whenever a passage ran across turns. This
rewrites every reference as the pieces of it that are spoken words
(:func:`goldlib.evidence_pieces`): one reference per turn, whitespace trimmed. Deterministic
and idempotent; prints how many references changed to stderr.

    python eval/fix_council_headers.py ../shared/corpora eval/council.gold.jsonl > new.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from goldlib import evidence_pieces, metadata_ranges

from codex_pipeline.evaluation.gold import read_source


def main(corpus: Path, gold: Path) -> int:
    texts: dict[str, tuple[str, list[tuple[int, int]]]] = {}
    changed = total = questions_changed = 0
    for line in gold.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        refs = []
        for r in q["references"]:
            if r["source"] not in texts:
                text = read_source(corpus / r["source"])
                texts[r["source"]] = (text, metadata_ranges(text))
            text, meta = texts[r["source"]]
            pieces = list(evidence_pieces(text, r["start"], r["end"], meta))
            total += 1
            if pieces != [(r["start"], r["end"])]:
                changed += 1
            refs += [{"source": r["source"], "start": s, "end": e} for s, e in pieces]
        questions_changed += refs != q["references"]
        if not refs:
            print(f"{gold}: {q['question']!r} has no spoken words left", file=sys.stderr)
            return 1
        q["references"] = refs
        print(json.dumps(q, ensure_ascii=False))
    print(f"{changed} of {total} references changed ({questions_changed} questions)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
