"""HTML to plain text with the xpath of every text run, for evidence anchors.

Scripts, styles, templates and ``<noscript>`` fallbacks are dropped; entities are
decoded; block elements become line or paragraph breaks. The returned text is the
document's canonical text, so chunk offsets index into it, not into the markup.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_SKIP = {"script", "style", "noscript", "template", "svg", "iframe", "object", "head"}
_KEEP_IN_HEAD = {"title"}
_PARAGRAPH = {
    "p", "div", "section", "article", "header", "footer", "nav", "aside", "main",
    "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "table", "blockquote", "pre",
    "figure", "figcaption", "form", "fieldset", "address", "title", "dl", "hr",
}
_LINE = {"li", "tr", "br", "dt", "dd", "caption"}
_CELL = {"td", "th"}
_VOID = {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source", "wbr"}
_WS = re.compile(r"\s+")


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.length = 0
        self.xpaths: list[tuple[int, str]] = []
        self.stack: list[tuple[str, list[int]]] = []  # (tag, path of 1-based indices)
        self.child_counts: list[dict[str, int]] = [{}]
        self.skip_depth = 0
        self.pre_depth = 0
        self.title_depth = 0

    # -- structure -------------------------------------------------------------
    def _xpath(self) -> str:
        return "/" + "/".join(f"{t}[{i}]" for t, i in self._path())

    def _path(self) -> list[tuple[str, int]]:
        return [(t, idx) for t, idx in ((t, p[-1]) for t, p in self.stack)]

    def handle_starttag(self, tag: str, attrs: list) -> None:
        counts = self.child_counts[-1]
        counts[tag] = counts.get(tag, 0) + 1
        if tag in _VOID:
            if tag in ("br", "hr") and not self.skip_depth:
                self._break(1 if tag == "br" else 2)
            return
        self.stack.append((tag, [counts[tag]]))
        self.child_counts.append({})
        if tag == "title":
            self.title_depth += 1
        if tag in _SKIP:
            self.skip_depth += 1
        if tag == "pre":
            self.pre_depth += 1
        if not self.skip_depth or tag == "title":
            self._block(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or not any(t == tag for t, _ in self.stack):
            return
        while self.stack:
            t, _ = self.stack.pop()
            self.child_counts.pop()
            if t in _SKIP:
                self.skip_depth -= 1
            if t == "title":
                self.title_depth -= 1
            if t == "pre":
                self.pre_depth -= 1
            if (not self.skip_depth or t == "title") and t not in _CELL:
                self._block(t)
            if t == tag:
                break

    def _block(self, tag: str) -> None:
        if tag in _PARAGRAPH:
            self._break(2)
        elif tag in _LINE:
            self._break(1)
        elif tag in _CELL:
            if self.out and not self.out[-1].endswith("\n"):
                self._append(" | ")

    # -- text ------------------------------------------------------------------
    def handle_data(self, data: str) -> None:
        if self.skip_depth and not self.title_depth:
            return
        if not self.pre_depth:
            data = _WS.sub(" ", data)
            if not self.out or self.out[-1].endswith((" ", "\n")):
                data = data.lstrip(" ")
        if data:
            self.xpaths.append((self.length, self._xpath()))
            self._append(data)

    def _append(self, s: str) -> None:
        self.out.append(s)
        self.length += len(s)

    def _break(self, n: int) -> None:
        if not self.out:
            return
        # drop trailing spaces before a break
        while self.out and self.out[-1].endswith(" ") and not self.pre_depth:
            last = self.out.pop()
            self.length -= len(last)
            stripped = last.rstrip(" ")
            if stripped:
                self.out.append(stripped)
                self.length += len(stripped)
                break
        tail = "".join(self.out[-3:])
        have = len(tail) - len(tail.rstrip("\n"))
        if have < n:
            self._append("\n" * (n - have))


def html_to_text(html: str) -> tuple[str, tuple[tuple[int, str], ...]]:
    """Extract readable text and ``(offset, xpath)`` for each text run."""
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    text = "".join(parser.out)
    stripped = text.rstrip()
    # leading blank lines cannot occur (breaks are skipped at the start)
    runs = tuple((o, x) for o, x in parser.xpaths if o < len(stripped))
    return stripped, runs
