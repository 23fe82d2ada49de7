"""The redirect matcher's column keys: locator revs read from the Arrow buffer, and string codes."""

from __future__ import annotations

import random
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from codex_pipeline.redirects import matching as redirects

REV = re.compile(r"\|r=([0-9a-f]{8}|[0-9a-f]{12})\|s=")  # the reference matcher's pattern

LOCATORS = [
    "guide.md|r=0123abcd|s=intro|p=000|b=000",
    "guide.md|r=0123456789ab|s=intro|p=000|b=000",  # rev12
    "guide.md|r=0123abcd|s=other|p=000|b=001",  # the same rev8 as the first
    "guide.md|r=0123abcd0000|s=x",  # a rev12 that starts like it
    "guide.md|r=0123abc|s=x",  # seven digits: no rev
    "guide.md|r=0123ABCD|s=x",  # upper case: no rev
    "guide.md|r=0123abcd|t=x",  # not followed by |s=
    "guide.md|r=zz|r=deadbeef|s=x",  # the first |r= holds no rev, a later one does
    "naïve é.md|r=deadbeef|s=é",  # multi-byte characters before and after
    "no rev at all",
    "",
    None,
    "short|r=deadbeef|s=",  # the rev ends the string
    "short|r=deadbeef|s",  # one byte short of the marker: the next row's first byte must not complete it
    "=next",
    "last|r=deadbeef|s",  # the same at the very end of the data
]


def _reference(locator: str | None) -> str | None:
    found = REV.search(locator) if locator is not None else None
    return found.group(1) if found else None


def _same_rev_pairs(locators: list[str | None], head: np.ndarray, tail: np.ndarray) -> None:
    revs = [_reference(x) for x in locators]
    assert [h >= 0 for h in head.tolist()] == [r is not None for r in revs]
    for i, r in enumerate(revs):
        for j, s in enumerate(revs):
            assert (r is not None and r == s) == (head[i] >= 0 and (head[i], tail[i]) == (head[j], tail[j])), (i, j)


@pytest.mark.parametrize("offset", [0, 3])
def test_revs_equal_exactly_where_the_regex_finds_equal_revs(offset: int) -> None:
    locators = ["x|r=00000000|s="] * offset + LOCATORS
    array = pa.array(locators).slice(offset)  # an Arrow slice: offsets into a shared buffer
    head, tail = redirects._revs(array)
    _same_rev_pairs(LOCATORS, head, tail)
    _same_rev_pairs(LOCATORS, *redirects._revs(pa.chunked_array([LOCATORS[:5], LOCATORS[5:]])))
    _same_rev_pairs(LOCATORS, *redirects._revs(pa.array(LOCATORS, pa.large_string())))


def test_revs_of_random_locators() -> None:
    rng = random.Random(5)
    digits = "0123456789abcdef"

    def rev() -> str:
        n = rng.choice([8, 8, 12, 12, 7, 9, 11, 13])
        text = "".join(rng.choice(digits[:3]) for _ in range(n))  # few digits: revs repeat
        return text.upper() if rng.random() < 0.05 else text

    def locator() -> str:
        parts = [rng.choice(["doc", "é", ""])]
        for _ in range(rng.randint(0, 3)):
            parts += ["|r=", rev(), rng.choice(["|s=", "|s", "|t=", ""]), rng.choice(["x", "|", "é", ""])]
        return "".join(parts)

    locators = [locator() for _ in range(3000)]
    head, tail = redirects._revs(pa.array(locators))
    revs = [_reference(x) for x in locators]
    assert sum(r is not None for r in revs) > 100
    keys: dict[str, tuple[int, int]] = {}
    for r, key in zip(revs, zip(head.tolist(), tail.tolist())):
        assert (r is None) == (key[0] < 0)
        if r is not None:
            assert keys.setdefault(r, key) == key  # one key per rev
    assert len(set(keys.values())) == len(keys)  # and one rev per key


def _assert_codes(a: pa.Array | pa.ChunkedArray, b: pa.Array | pa.ChunkedArray) -> None:
    """Codes equal exactly where the values are, -1 for null, and the count of distinct values."""
    codes_a, codes_b, size = redirects._joint_codes(a, b)
    values = a.to_pylist() + b.to_pylist()
    codes = np.r_[codes_a, codes_b].tolist()
    assert [c < 0 for c in codes] == [v is None for v in values]
    pairs = {(v, c) for v, c in zip(values, codes) if v is not None}
    assert len(pairs) == len({v for v, _ in pairs}) == len({c for _, c in pairs}) == size
    assert all(0 <= c < size for c in codes if c >= 0)


def test_joint_codes_of_fixed_and_varying_widths() -> None:
    rng = random.Random(9)
    ids = [f"urn:aprs:chunk:{rng.getrandbits(64):016x}" for _ in range(500)]
    _assert_codes(pa.array(ids[:300]), pa.chunked_array([ids[200:350], ids[350:]]))  # fixed width: the fast path
    hashes = [f"{rng.getrandbits(256):064x}" for _ in range(50)]
    _assert_codes(pa.array(hashes * 3), pa.array(hashes[::2]))
    _assert_codes(pa.array(["a", "bb", "a", None]), pa.array(["bb", "ccc"]))  # varying widths, nulls: Arrow
    _assert_codes(pa.array(["ab", "cd"]), pa.array([None, "ab"], pa.large_string()))
    _assert_codes(pa.array([], pa.string()), pa.array([], pa.string()))


def test_joint_codes_survive_colliding_mixes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A mix that sends every string to one number: the comparison notices and Arrow decides."""
    monkeypatch.setattr(redirects, "_MIX", np.uint64(0))
    values = pa.array([f"{k:08d}" for k in range(100)] * 2)
    assert redirects._fixed_width_codes(values) is None
    _assert_codes(values, pa.array(["00000007", "99999999"]))
    assert pc.all(pc.equal(values, values)).as_py()
