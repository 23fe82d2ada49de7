"""HTML of the evidence viewer: plain strings, every value escaped (document text is untrusted), one nonce per page.

A document's canonical text is cut at every boundary that matters (the cited spans, the
selected chunk's spans, each chunk's start) and each piece is escaped on its own, so the
highlighted text of span ``i`` (every ``mark[data-span="i"]``, in order) is exactly
``canonical_text[start:end]``. Chunk starts are empty links whose label is drawn by CSS
(``::before``), so they add nothing to the text a reader copies.
"""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Iterable, Sequence

Span = tuple[int, int]

STYLE = """
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#24323f;color:#fff;padding:.6em 1.2em}header a{color:#fff;text-decoration:none;font-weight:600}
main{display:flex;gap:1.2em;padding:1em 1.2em}#doc{flex:3;min-width:0}aside{flex:1.3;min-width:18em}
.text{white-space:pre-wrap;background:#fff;border:1px solid #ddd;padding:1em;border-radius:4px;font-family:Georgia,serif}
mark.cite{background:#ffe066;outline:1px solid #e0a800}.cur{background:#e3f0ff}
a.b{display:inline-block;text-decoration:none}a.b::before{content:attr(data-l);font:10px monospace;color:#fff;
background:#7a8b99;border-radius:3px;padding:0 3px;margin:0 2px;vertical-align:super}a.b.sel::before{background:#1565c0}
.hit{background:#fff;border:1px solid #ddd;border-radius:4px;padding:.6em 1em;margin:.6em 0}.meta{color:#555;font-size:13px}
.warn{background:#fff4e5;border:1px solid #f0b400;padding:.5em 1em;border-radius:4px}.err{background:#fdecea;border:1px solid #d32f2f;padding:.5em 1em}
textarea{width:100%;font:12px monospace}dt{font-weight:600;margin-top:.4em}dd{margin:0;word-break:break-all}
form input[type=text]{width:28em;font-size:15px;padding:.3em}form input[type=number]{width:4em}#results{flex:1}
.pdfpage{margin:.8em 0}.pdfpage svg{width:100%;border:1px solid #ccc;background:#fff}
.pdfpage rect.box{fill:rgba(255,224,102,.35);stroke:#e0a800;stroke-width:1.5}
"""


BIDI_CONTROL = re.compile("[\u202a-\u202e\u2066-\u2069]")
"""Bidirectional embeddings, overrides and isolates: they reorder what follows them on screen, so a
file name ``report<U+202E>fdp.exe`` would read ``reportexe.pdf``."""


def e(value: object) -> str:
    """Escaped for HTML text and double-quoted attributes; a bidi control shows as ``[U+202E]``, never acts."""
    text = BIDI_CONTROL.sub(lambda m: f"[U+{ord(m.group()):04X}]", "" if value is None else str(value))
    return html.escape(text, quote=True)


def page(title: str, body: str, script: str = "") -> tuple[str, str]:
    """(HTML, Content-Security-Policy): only this page's own style and script run."""
    nonce = secrets.token_urlsafe(16)
    doc = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
           f'<meta name="viewport" content="width=device-width,initial-scale=1"><style nonce="{nonce}">{STYLE}</style>'
           f'</head><body><header><a href="/view">Codex evidence viewer</a></header>{body}'
           + (f'<script nonce="{nonce}">{script}</script>' if script else "") + "</body></html>")
    csp = (f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; img-src 'self'; "
           "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
    return doc, csp


def annotated_text(text: str, marks: Sequence[Span], selected: Sequence[Span],
                   starts: Iterable[tuple[int, str, str, bool]]) -> str:
    """``text`` escaped piece by piece: ``marks`` (cited spans) in ``<mark data-span=i>``, the ``selected`` chunk's
    spans in ``.cur``, and at each ``(offset, href, label, is_selected)`` of ``starts`` a chunk-boundary link."""
    n = len(text)
    clip = [(max(0, min(s, n)), max(0, min(e_, n))) for s, e_ in marks]
    sel = [(max(0, min(s, n)), max(0, min(e_, n))) for s, e_ in selected]
    at: dict[int, list[str]] = {}
    for offset, href, label, is_sel in starts:
        cls = "b sel" if is_sel else "b"
        at.setdefault(max(0, min(offset, n)), []).append(
            f'<a class="{cls}" href="{e(href)}" data-l="{e(label)}" title="{e(label)}"></a>')
    cuts = sorted({0, n, *at, *(p for s in clip + sel for p in s)})
    out: list[str] = []
    for a, b in zip(cuts, cuts[1:] + [n]):
        out += at.pop(a, [])
        if b <= a:
            continue
        piece = html.escape(text[a:b], quote=True)  # exact: a copied citation is the text itself
        for i, (s, e_) in enumerate(clip):
            if s <= a and b <= e_:
                piece = f'<mark class="cite" data-span="{i}">{piece}</mark>'
        if any(s <= a and b <= e_ for s, e_ in sel):
            piece = f'<span class="cur">{piece}</span>'
        out.append(piece)
    return "".join(out)


DOCUMENT_SCRIPT = """
const first = document.querySelector('mark.cite') || document.querySelector('.cur');
if (first) first.scrollIntoView({block: 'center'});
const btn = document.getElementById('copy');
if (btn) btn.addEventListener('click', () => {
  const area = document.getElementById('citation');
  const done = () => { btn.textContent = 'Copied'; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(area.value).then(done, () => { area.select(); if (document.execCommand('copy')) done(); });
  } else { area.select(); if (document.execCommand('copy')) done(); }
});
"""

