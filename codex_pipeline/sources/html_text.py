"""HTML to plain text with the xpath of every text run, for evidence anchors.

The page is parsed by an HTML5 parser (lexbor, through ``selectolax``) into the DOM a
browser builds, scripting enabled: implied ``</p>``/``</li>``, ``<tbody>``, foster
parenting and ``<noscript>`` as raw text all happen as in a browser, so every xpath
resolves in that DOM (``/html[1]/body[1]/p[2]``), not only in the markup as written.

Scripts, styles, templates and ``<noscript>`` fallbacks are dropped; entities are
decoded; block elements become line or paragraph breaks. The returned text is the
document's canonical text, so chunk offsets index into it, not into the markup.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

# Not rendered as text: code, raw-text fallbacks and embedded documents.
_SKIP = {
    "script", "style", "noscript", "template", "svg", "iframe", "object", "noembed", "noframes",
}
_FOREIGN = {"math"}  # MathML: its text is kept, attributed to the HTML element around it
_PARAGRAPH = {
    "p", "div", "section", "article", "header", "footer", "nav", "aside", "main",
    "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "table", "blockquote", "pre",
    "figure", "figcaption", "form", "fieldset", "address", "title", "dl", "hr",
}
_LINE = {"li", "tr", "br", "dt", "dd", "caption"}
_CELL = {"td", "th"}
_WS = re.compile(r"\s+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")  # a tag name XPath can write as a name test

Runs = tuple[tuple[int, str], ...]


class _Text:
    """Accumulates the canonical text and the ``(offset, xpath)`` of each text run."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.length = 0
        self.runs: list[tuple[int, str]] = []
        self.visible_end = 0  # offset just past the last non-blank character of the text so far
        self.pre_depth = 0

    def data(self, data: str, xpath: str) -> None:
        if not self.pre_depth:
            data = _WS.sub(" ", data)
            if not self.out or self.out[-1].endswith((" ", "\n")):
                data = data.lstrip(" ")
        if not data:
            return
        visible = data.rstrip()
        if visible:
            # The run starts where the previous one's visible text ended, so the breaks and cell
            # bars before a text belong to it: any offset resolves to the element whose text follows.
            self.runs.append((self.visible_end, xpath))
            self.visible_end = self.length + len(visible)
        self._append(data)

    def start(self, tag: str) -> None:
        """An element opens: a break before a block, a ``|`` between table cells."""
        if tag in _CELL:
            if self.out and not self.out[-1].endswith("\n"):
                self._append(" | ")
        else:
            self._block(tag)
        if tag == "pre":
            self.pre_depth += 1

    def end(self, tag: str) -> None:
        """An element closes: a break after a block."""
        if tag == "pre":
            self.pre_depth -= 1
        self._block(tag)

    def _block(self, tag: str) -> None:
        if tag in _PARAGRAPH:
            self._break(2)
        elif tag in _LINE:
            self._break(1)

    def _append(self, s: str) -> None:
        self.out.append(s)
        self.length += len(s)

    def _break(self, n: int) -> None:
        if not self.out:
            return
        if not self.pre_depth:  # trailing spaces do not survive a break
            while self.out and self.out[-1].endswith(" "):
                last = self.out.pop()
                stripped = last.rstrip(" ")
                self.length -= len(last) - len(stripped)
                if stripped:
                    self.out.append(stripped)
                    break
        tail = "".join(self.out[-3:])
        have = len(tail) - len(tail.rstrip("\n"))
        if have < n:
            self._append("\n" * (n - have))


def _step(tag: str, index: int) -> str:
    """``p[2]``; a name XPath cannot write as is (Word's ``<o:p>``) is matched by its local name."""
    if _NAME.fullmatch(tag):
        return f"{tag}[{index}]"
    if "'" not in tag:
        literal = f"'{tag}'"
    elif '"' not in tag:
        literal = f'"{tag}"'
    else:
        literal = "concat(" + ", \"'\", ".join(f"'{part}'" for part in tag.split("'")) + ")"
    return f"*[local-name()={literal}][{index}]"


def _walk(root: LexborNode, acc: _Text) -> None:
    """Depth-first over the DOM without recursion (pages can nest deeper than Python's stack)."""
    path = [f"{root.tag}[1]"]
    # per open element: next child to visit, tag counts of the children seen so far, tag
    frames: list[tuple[list[LexborNode | None], dict[str, int], str]] = [([root.child], {}, root.tag or "")]
    acc.start(root.tag or "")
    xpath = "/" + "/".join(path)
    while frames:
        cursor, counts, parent_tag = frames[-1]
        node = cursor[0]
        if node is None:
            frames.pop()
            path.pop()
            xpath = "/" + "/".join(path)
            acc.end(parent_tag)
            continue
        cursor[0] = node.next
        tag = node.tag or ""
        if tag == "-text":
            acc.data(node.text_content or "", xpath)
            continue
        if tag.startswith("-") or tag.startswith("_"):  # comments, doctype
            continue
        counts[tag] = index = counts.get(tag, 0) + 1
        if tag in _SKIP:
            continue
        if tag in _FOREIGN:
            # MathML element names do not match HTML name tests: keep the text, anchor it to the parent
            acc.data(node.text(deep=True, separator=" "), xpath)
            continue
        if tag == "textarea":
            # raw text, one text node in a browser; lexbor can rebuild open <b>/<i> inside it, a browser does not
            acc.start(tag)
            acc.data(node.text(deep=True), f"{xpath}/{_step(tag, index)}")
            acc.end(tag)
            continue
        path.append(_step(tag, index))
        xpath = "/" + "/".join(path)
        frames.append(([node.child], {}, tag))
        acc.start(tag)


def html_to_text(html: str) -> tuple[str, Runs]:
    """Readable text and the ``(offset, xpath)`` of each text run, xpaths into the HTML5 DOM.

    A run is one text node's text; it starts right after the previous run's last visible
    character, so the breaks and cell bars before it are its own: the run at or before any
    offset (a chunk's start) is the element whose text comes next.
    """
    root = LexborHTMLParser(html, scripting=True).root
    acc = _Text()
    if root is not None:
        _walk(root, acc)
    text = "".join(acc.out).rstrip()
    # leading blank lines cannot occur (breaks are skipped at the start)
    return text, tuple(acc.runs)
