"""Where an LLM's statement rests in the canonical text, or nowhere.

A model paraphrases ("BERT uses bidirectional training" for "It uses …"), so its
statements are not slices. Each is aligned to the sentences of its parent chunk's
source ranges: sentences are picked greedily (at most :data:`MAX_SENTENCES`) while
they add content words of the statement; the score is the share of the statement's
content words they hold. Under :data:`MIN_SCORE` the spans are null: a statement that
cannot be found is never given a place it did not come from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codex_pipeline.propositions.base import Span
from codex_pipeline.propositions.offline import sentence_spans

MIN_SCORE = 0.6
MAX_SENTENCES = 3
_WORD = re.compile(r"\w+")
_STOP = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been being it its this that these "
    "those they them their he she his her has have had do does did not no will would shall should can could may "
    "might must which who whom whose what when where there here also than then so such into over under about".split()
)


def _norm(word: str) -> str:
    w = word.lower()
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def content_words(text: str) -> set[str]:
    """The words that score an alignment: stop words dropped, lower-cased, a plural ``s`` stripped."""
    return {_norm(w) for w in _WORD.findall(text) if w.lower() not in _STOP}


class ChunkAligner:
    """The sentences of one chunk's source ranges, segmented once for all its statements."""

    def __init__(self, canonical: str, sources: Sequence[Span]) -> None:
        self.sentences = [s for a, b in sources for s in sentence_spans(canonical, a, b)]
        self.words = [content_words(canonical[a:b]) for a, b in self.sentences]

    def align(self, statement: str) -> tuple[tuple[Span, ...] | None, float]:
        """The statement's sentence spans, sorted, and its score (4 places).

        Spans are None when the score is under :data:`MIN_SCORE`; the score is 0.0 when the
        statement has no content word or the chunk no sentence.
        """
        want = content_words(statement)
        if not want or not self.sentences:
            return None, 0.0
        covered: set[str] = set()
        picked: list[int] = []
        for _ in range(MAX_SENTENCES):
            gains = [len((w & want) - covered) for w in self.words]
            best = max(range(len(gains)), key=lambda i: (gains[i], -i))
            if gains[best] == 0:
                break
            picked.append(best)
            covered |= self.words[best] & want
            if covered == want:
                break
        score = len(covered) / len(want)
        if score < MIN_SCORE:
            return None, round(score, 4)
        return tuple(sorted(self.sentences[i] for i in picked)), round(score, 4)
