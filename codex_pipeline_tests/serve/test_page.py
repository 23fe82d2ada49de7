"""The viewer's HTML escaping: names and titles never carry a bidi control that acts; cited text stays exact."""

from __future__ import annotations

import html

from hypothesis import given
from hypothesis import strategies as st

from codex_pipeline.serve.page import BIDI_CONTROL, annotated_text, e

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


@given(st.text(alphabet=st.sampled_from(list(BIDI) + list("ab<&\"' .é"))))
def test_escaped_values_show_bidi_controls_as_codes(value: str) -> None:
    out = e(value)
    assert not BIDI_CONTROL.search(out)
    assert html.unescape(out) == BIDI_CONTROL.sub(lambda m: f"[U+{ord(m.group()):04X}]", value)


def test_a_file_name_with_an_override_reads_as_written() -> None:
    assert e("invoice\u202etxt.exe") == "invoice[U+202E]txt.exe"


def test_document_text_keeps_its_characters_for_exact_citations() -> None:
    text = "Arabic \u2067نص\u2069 quoted"
    out = annotated_text(text, [(0, len(text))], [], [])
    assert html.unescape(out.removeprefix('<mark class="cite" data-span="0">').removesuffix("</mark>")) == text
