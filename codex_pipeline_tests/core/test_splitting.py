"""Properties of the token windows and the bounded split, plus golden cases."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.core.splitting import bounded_split, token_windows
from codex_pipeline.core.tokens import TokenizedText, count_tokens

ROOT = Path(__file__).resolve().parents[2]
TEXTS = sorted(p for p in (ROOT / "codex_pipeline" / "sample_landing" / "narrative").rglob("*.txt"))

words = st.sampled_from(["the", "council", "résumé", "日本語", "a", "permit,", "approved.", "—", "3.5", "x" * 40])
seps = st.sampled_from([" ", " ", " ", "\n", "\n\n", "  ", ". "])
prose = st.lists(st.tuples(words, seps), min_size=1, max_size=400).map(lambda xs: "".join(a + b for a, b in xs))


def check_windows(text: str, window: int, overlap: int) -> None:
    tt = TokenizedText(text)
    spans = token_windows(tt, window, overlap)
    assert spans[0].start == 0 and spans[-1].end == len(text)  # whole text covered
    for sp in spans:
        assert sp.tokens == count_tokens(text[sp.start : sp.end])  # exact
        assert sp.tokens <= window + 2  # only unsafe (no-space) cuts may drift by a token
    for a, b in zip(spans, spans[1:]):
        assert a.start < b.start <= a.end  # progress, contiguous or overlapping
        if overlap == 0:
            assert b.start == a.end


@settings(max_examples=60, deadline=None)
@given(text=prose, window=st.integers(8, 120), overlap=st.integers(0, 7))
def test_windows_properties(text: str, window: int, overlap: int) -> None:
    check_windows(text, window, overlap)


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
def test_windows_on_samples(path: Path) -> None:
    text = path.read_text()
    check_windows(text, 600, 50)
    spans = token_windows(TokenizedText(text))
    for a, b in zip(spans, spans[1:]):
        overlap = count_tokens(text[b.start : a.end])
        assert 40 <= overlap <= 60  # about 50 tokens, snapped to word boundaries


def test_windows_never_split_multibyte_characters() -> None:
    text = "日本語のテキストです。" * 400 + " résumé " * 300
    for sp in token_windows(TokenizedText(text), 100, 10):
        chunk = text[sp.start : sp.end]
        assert chunk.encode("utf-8").decode("utf-8") == chunk
        assert sp.tokens == count_tokens(chunk)


@settings(max_examples=60, deadline=None)
@given(text=prose, cap=st.integers(10, 200))
def test_bounded_split_properties(text: str, cap: int) -> None:
    tt = TokenizedText(text)
    pieces = bounded_split(tt, cap=cap, target_max=max(5, cap // 2))
    covered = []
    for p in pieces:
        assert p.tokens == count_tokens(text[p.start : p.end]) <= cap
        covered.append(text[p.start : p.end])
    # nothing but whitespace is left out, and pieces are in order without overlap
    assert "".join("".join(c.split()) for c in covered) == "".join(text.split()) or len(pieces) == 1
    for a, b in zip(pieces, pieces[1:]):
        assert a.end <= b.start


def test_bounded_split_keeps_small_sections_whole() -> None:
    text = "A short section.\n\nWith two paragraphs."
    assert [(p.start, p.end) for p in bounded_split(TokenizedText(text))] == [(0, len(text))]


def test_bounded_split_prefers_paragraphs_then_sentences() -> None:
    para = " ".join(["The board approved the budget."] * 60)  # ~360 tokens, 60 sentences
    text = "\n\n".join([para] * 6)  # ~2,200 tokens: over the cap
    pieces = bounded_split(TokenizedText(text), cap=1500, target_max=800)
    assert len(pieces) == 3
    for p in pieces:  # cuts land on paragraph boundaries
        assert text[p.start : p.end].startswith("The board") and text[p.start : p.end].endswith("budget.")
        assert p.tokens <= 800
    long_para = " ".join(["The board approved the budget."] * 300)  # one ~1,800-token paragraph
    pieces = bounded_split(TokenizedText(long_para), cap=1500, target_max=800)
    assert all(long_para[p.start : p.end].endswith(".") for p in pieces)  # sentence cuts


def test_single_word_over_the_cap_is_cut_by_tokens() -> None:
    text = "start " + "abcdefghij" * 2000 + " end"
    pieces = bounded_split(TokenizedText(text), cap=1500, target_max=800)
    assert all(p.tokens <= 1500 for p in pieces)
    assert "".join(text[p.start : p.end] for p in pieces).replace(" ", "") == text.replace(" ", "")
