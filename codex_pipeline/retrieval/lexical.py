"""The lexical analyzer behind BM25: words, numbers and whole identifiers.

Codex's users search for permit numbers (``BP-2024-001234``), statute citations
(``29 CFR 1926.501(b)(1)``), addresses and names. A plain word tokenizer cuts an
identifier into common pieces (``2024``, ``501``) that match thousands of chunks;
here every identifier is indexed whole (``bp-2024-001234``, ``1926.501(b)(1)`` and
its prefixes ``1926.501(b)``, ``1926.501``) as well as in parts, and a query naming
an identifier the index knows searches it whole (:class:`QueryTerms`): it then
matches its one rare term, not every chunk sharing ``2024`` or ``501``.
Words are lowercased, English stopwords dropped and, when PyStemmer is installed,
stemmed (Snowball English); digits and identifiers are never stemmed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass

WORD = re.compile(r"\w+")
IDENTIFIER = re.compile(r"\b\w+(?:[-./:]\w+)+(?:\(\w{1,4}\))*|\b\w+(?:\(\w{1,4}\))+")
"""Runs of word characters joined by ``- . / :`` (ids, dates, versions), with any
parenthesized subsections a statute citation carries: ``1926.651(k)(1)``."""
QUOTED = re.compile(r'"([^"]+)"|\u201c([^\u201d]+)\u201d')
"""A quoted part of a query ("…" or “…”): a phrase the user asked for by name."""
ANALYZER_VERSION = "2"
"""Part of the index manifest: a change here means every index must be rebuilt."""


@functools.lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    """bm25s's English list, loaded on first use: the bm25s package imports numba wherever it is
    installed (0.4 s), and every run worker imports this module without analyzing a word."""
    import bm25s.stopwords
    return frozenset(bm25s.stopwords.STOPWORDS_EN)


@functools.lru_cache(maxsize=1)
def _stem_words() -> Callable[[list[str]], list[str]] | None:
    try:
        import Stemmer  # PyStemmer: optional, C speed
    except ImportError:
        return None
    return Stemmer.Stemmer("english").stemWords


def stemming() -> str:
    """``snowball-english`` or ``none``: recorded with each index so query and index agree."""
    return "snowball-english" if _stem_words() is not None else "none"


def _words(lowered: str, stem: bool) -> list[str]:
    stop = _stopwords()
    words = [w for w in WORD.findall(lowered) if w not in stop]
    stemmer = _stem_words() if stem else None
    return stemmer(words) if stemmer is not None and words else words


def _expand(identifier: str) -> list[str]:
    """An identifier and its subsection prefixes: ``1926.651(k)(1)`` → itself, ``1926.651(k)``, ``1926.651``."""
    out = [identifier]
    while identifier.endswith(")") and "(" in identifier:
        identifier = identifier[: identifier.rindex("(")]
        if identifier:
            out.append(identifier)
    return out


def analyze(text: str, stem: bool = True) -> list[str]:
    """The BM25 terms of one indexed text: every word (identifier parts included), then each identifier whole."""
    lowered = text.lower()
    words = _words(lowered, stem)
    ids = IDENTIFIER.findall(lowered)
    if not ids:
        return words
    return words + [t for i in ids for t in _expand(i)]


@dataclass(frozen=True)
class QueryTerms:
    """A query's terms: words outside identifiers, and each identifier with its parts.

    An identifier the index knows is searched whole, so ``29 CFR 1926.651(c)(2)`` does
    not rank ``1926.651(j)(2)`` up for sharing ``1926``, ``651`` and ``2``; one the index
    has never seen (typed differently, or absent) falls back to its parts.
    """

    words: tuple[str, ...]
    identifiers: tuple[tuple[str, tuple[str, ...]], ...]

    def resolve(self, vocabulary: Container[str]) -> list[str]:
        """The terms BM25 sums: the words, and each identifier whole when ``vocabulary`` holds it, else its parts."""
        terms = list(self.words)
        for whole, parts in self.identifiers:
            terms += [whole] if whole in vocabulary else list(parts)
        return terms

    @property
    def all(self) -> list[str]:
        """Every term, identifiers whole and in parts (for matching text, not for ranking)."""
        return list(self.words) + [t for whole, parts in self.identifiers for t in (whole, *parts)]


def analyze_query(text: str, stem: bool = True) -> QueryTerms:
    """The terms of query ``text``: its words outside identifiers, and each identifier with its own words as
    parts (stopwords dropped, stemmed when ``stem`` and a stemmer is installed)."""
    lowered = text.lower()
    ids = [(m.start(), m.end(), m.group()) for m in IDENTIFIER.finditer(lowered)]
    outside, at = [], 0
    for start, end, _ in ids:
        outside.append(lowered[at:start])
        at = end
    outside.append(lowered[at:])
    return QueryTerms(
        tuple(_words(" ".join(outside), stem)),
        tuple((i, tuple(_words(i, stem))) for _, _, i in ids),
    )


def phrase_terms(text: str, min_terms: int) -> tuple[str, ...]:
    """The words a text must hold in this order, side by side, to match query ``text`` as a phrase (stopwords
    dropped on both sides, as the index stores them): its first quoted part of two words or more, else the whole
    query when it has ``min_terms`` words or more (a pasted sentence); () when it is no phrase."""
    for m in QUOTED.finditer(text):
        words = _words((m.group(1) or m.group(2)).lower(), True)
        if len(words) >= 2:
            return tuple(words)
    words = _words(text.lower(), True)
    return tuple(words) if len(words) >= min_terms else ()


def sentence_bounds(text: str) -> Sequence[tuple[int, int]]:
    """Sentence-ish stretches of ``text``: split after ``.!?`` + space, and at blank lines and line breaks."""
    out: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        end = m.start() + (1 if text[m.start()] in ".!?" else 0)
        if text[start:end].strip():
            out.append(_trim(text, start, end))
        start = m.end()
    if text[start:].strip():
        out.append(_trim(text, start, len(text)))
    return out


_SENTENCE_END = re.compile(r"[.!?](?=\s)\s*|\n\s*")


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
