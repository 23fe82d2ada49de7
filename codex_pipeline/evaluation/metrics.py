"""Character-level scores of retrieved spans against reference spans, per source file.

For one question, ``R`` is the set of (file, character) pairs the top-k hits cover
and ``G`` the set the references cover: recall ``|R∩G|/|G|``, precision
``|R∩G|/|R|``, IoU ``|R∩G|/|R∪G|``; hit@k is 1 when any hit overlaps any reference.
Overlapping hits count their shared characters once (sets, not sums). Reported
numbers are means over questions, in percent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

FileSpans = Mapping[str, Sequence[tuple[int, int]]]


def merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, non-overlapping, non-empty ranges covering the same characters."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(x for x in spans if x[1] > x[0]):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def size(spans: Sequence[tuple[int, int]]) -> int:
    """Characters in ``spans``, overlaps counted twice (:func:`merge` first)."""
    return sum(e - s for s, e in spans)


def intersection(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """Characters in both merged range lists (two-pointer walk)."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


@dataclass(frozen=True)
class Score:
    """One question's scores as fractions in [0, 1] (see the module docstring); ``hit``: any overlap."""

    recall: float
    precision: float
    iou: float
    hit: bool
    retrieved_chars: int
    reference_chars: int


def score(retrieved: FileSpans, reference: FileSpans) -> Score:
    """The scores of ``retrieved`` against ``reference``, each file's spans merged first; 0.0 for a ratio
    with nothing to divide by."""
    got = {f: merge(s) for f, s in retrieved.items()}
    want = {f: merge(s) for f, s in reference.items()}
    inter = sum(intersection(got.get(f, []), spans) for f, spans in want.items())
    r, g = sum(size(s) for s in got.values()), sum(size(s) for s in want.values())
    union = r + g - inter
    return Score(
        recall=inter / g if g else 0.0,
        precision=inter / r if r else 0.0,
        iou=inter / union if union else 0.0,
        hit=inter > 0,
        retrieved_chars=r,
        reference_chars=g,
    )


@dataclass(frozen=True)
class Summary:
    """Means over questions, in percent (``mean_retrieved_chars``: characters)."""

    questions: int
    recall: float
    precision: float
    iou: float
    hit_at_k: float
    mean_retrieved_chars: float

    def as_dict(self) -> dict[str, float | int]:
        """JSON-ready: percentages rounded to 2 decimals, characters to 1."""
        return {
            "questions": self.questions,
            "recall": round(self.recall, 2),
            "precision": round(self.precision, 2),
            "iou": round(self.iou, 2),
            "hit_at_k": round(self.hit_at_k, 2),
            "mean_retrieved_chars": round(self.mean_retrieved_chars, 1),
        }


def summarize(scores: Sequence[Score]) -> Summary:
    """Means over questions, as percentages."""
    n = len(scores) or 1
    return Summary(
        questions=len(scores),
        recall=100 * sum(s.recall for s in scores) / n,
        precision=100 * sum(s.precision for s in scores) / n,
        iou=100 * sum(s.iou for s in scores) / n,
        hit_at_k=100 * sum(s.hit for s in scores) / n,
        mean_retrieved_chars=sum(s.retrieved_chars for s in scores) / n,
    )
