"""Carry gold spans from one transcript of a recording to another (captions → Whisper) by word alignment.

The Huntsville meetings come twice: the official captions (one caption line per line)
and a Whisper transcript of the same audio (one single line). The questions are the
same; the evidence must be the Whisper words that say the same thing. Both texts are
cut into words (lower-cased, punctuation dropped) and aligned once per meeting with
:class:`difflib.SequenceMatcher`; a reference becomes the Whisper stretch from the
first to the last of its words that aligned, widened to whole words. A reference with
fewer than half of its words aligned is reported and dropped (the question too when
nothing is left), so every kept span is the same speech in the other transcript.

    python eval/transfer_gold.py ../shared/corpora eval/huntsville.gold.jsonl \\
        .captions.txt .whisper.txt > eval/huntsville-whisper.gold.jsonl
"""

from __future__ import annotations

import bisect
import json
import re
import sys
from difflib import SequenceMatcher
from pathlib import Path

from codex_pipeline.evaluation.gold import read_source

_WORD = re.compile(r"[\w']+")


def words(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    found = [(m.group().lower().strip("'"), (m.start(), m.end())) for m in _WORD.finditer(text)]
    return [w for w, _ in found], [s for _, s in found]


class Alignment:
    """Word-for-word correspondence between two texts of the same speech."""

    def __init__(self, a: str, b: str) -> None:
        self.a_words, self.a_spans = words(a)
        self.b_words, self.b_spans = words(b)
        self.a_starts = [s for s, _ in self.a_spans]
        self.to_b: dict[int, int] = {}
        matcher = SequenceMatcher(None, self.a_words, self.b_words, autojunk=False)
        for block in matcher.get_matching_blocks():
            for k in range(block.size):
                self.to_b[block.a + k] = block.b + k

    def transfer(self, start: int, end: int) -> tuple[tuple[int, int] | None, float]:
        """The other text's span for ``[start, end)`` of this one, and the share of its words that aligned."""
        i0 = bisect.bisect_left(self.a_starts, start)
        i1 = bisect.bisect_left(self.a_starts, end)
        inside = [i for i in range(i0, i1) if i in self.to_b]
        share = len(inside) / max(i1 - i0, 1)
        if not inside:
            return None, share
        first, last = self.to_b[inside[0]], self.to_b[inside[-1]]
        # edge words that did not align ("9%" heard as "Nine percent"): take the other text's words in the same gap
        if inside[0] > i0:
            before = self._aligned_before(i0)
            gap = first - (before + 1)
            if 0 < gap <= 2 * (inside[0] - i0) + 1:
                first = before + 1
        if inside[-1] < i1 - 1:
            after = self._aligned_after(i1 - 1)
            gap = after - 1 - last
            if 0 < gap <= 2 * (i1 - 1 - inside[-1]) + 1:
                last = after - 1
        return (self.b_spans[first][0], self.b_spans[last][1]), share

    def _aligned_before(self, i: int) -> int:
        """The other text's index of the last aligned word before word ``i`` (-1 at the start)."""
        while i > 0:
            i -= 1
            if i in self.to_b:
                return self.to_b[i]
        return -1

    def _aligned_after(self, i: int) -> int:
        """The other text's index of the first aligned word after word ``i`` (its word count at the end)."""
        while i < len(self.a_words) - 1:
            i += 1
            if i in self.to_b:
                return self.to_b[i]
        return len(self.b_words)


def main(corpus: Path, gold: Path, old_suffix: str, new_suffix: str) -> int:
    aligned: dict[str, Alignment] = {}
    texts: dict[str, str] = {}
    kept = dropped = 0
    for n, line in enumerate(gold.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        q = json.loads(line)
        refs = []
        for r in q["references"]:
            src = r["source"]
            new = src[: -len(old_suffix)] + new_suffix
            if src not in aligned:
                texts[new] = read_source(corpus / new)
                aligned[src] = Alignment(read_source(corpus / src), texts[new])
            span, share = aligned[src].transfer(r["start"], r["end"])
            if span is None or share < 0.5:
                print(f"{gold}:{n}: {src} {r['start']}:{r['end']}: only {100 * share:.0f}% of its words aligned; "
                      "dropped", file=sys.stderr)
                continue
            if refs and refs[-1]["source"] == new and not texts[new][refs[-1]["end"]:span[0]].strip():
                refs[-1]["end"] = max(refs[-1]["end"], span[1])  # pieces cut by a caption time stamp: one stretch
            else:
                refs.append({"source": new, "start": span[0], "end": span[1]})
        if refs:
            kept += 1
            print(json.dumps({"question": q["question"], "references": refs}, ensure_ascii=False))
        else:
            dropped += 1
    print(f"{gold}: {kept} questions carried over, {dropped} dropped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]))
