"""The block structure of a Markdown body, from either of two CommonMark parsers, identically.

Two ports of the same parser (markdown-it: CommonMark plus the GFM table rule) can read the
body, and both give the same :class:`Block` list, offset for offset and title for title:

* ``markdown-it-pyrs`` (markdown-it.rs, compiled): the fast one, used wherever it installs. It
  has no wheels past CPython 3.12.
* ``markdown-it-py`` (pure Python): the fallback on every other Python. Only block rules run
  over the whole body; inline rules run on heading lines alone (their titles).

The two differ in how they say where a block is (markdown-it.rs: a byte span that ends at the
last line's last character; markdown-it-py: a range of lines), so the fallback rebuilds that
span from its line range and both are snapped to whole lines by one rule. The tests run both
over every bundled sample, the fixtures and the shared corpora and compare the blocks, and the
golden chunk check gives identical chunks with either. Randomized tests found three shapes
where the ports themselves disagree, none of them in the samples or corpora: a one-column table
(``| x |`` over ``---``), a list marker with nothing after it right under other content, and a
table starting on a block quote's lazy continuation line.

:func:`parse_blocks` takes ``parser=`` to choose one; by default the compiled parser when it
imports, else the fallback (:func:`default_parser`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from codex_pipeline.core.documents import Block

__all__ = ["PARSERS", "available_parsers", "default_parser", "parse_blocks", "set_default_parser"]

PYRS = "markdown-it-pyrs"
PY = "markdown-it-py"
PARSERS = (PYRS, PY)

# (kind, start, end, key, meta) with offsets into the body: whole lines, end just past a newline
_Found = tuple[str, int, int, str, dict[str, Any]]

_CONTAINERS = frozenset({"bullet_list", "ordered_list", "list_item", "blockquote"})
_HEADINGS = frozenset({"heading", "lheading"})
_ATTR_LIST = re.compile(r"[ \t]*\{[^{}]*\}[ \t]*$")  # a trailing {#anchor .class} (not CommonMark, common in docs)


def parse_blocks(text: str, body_start: int = 0, parser: str | None = None) -> list[Block]:
    """The structure of ``text[body_start:]`` as blocks with whole-line offsets into ``text``.

    * ``heading``: a top-level ATX or setext heading; ``key`` is its level (``"1"``–``"6"``),
      ``meta["title"]`` its plain text. A setext heading starts at its paragraph's first line.
      Headings inside lists and block quotes are content, not section starts; a ``#`` line in
      code, in an HTML block or comment, or in a table is no heading at all (CommonMark).
    * ``code``: a fenced (``key="fenced"``; an unclosed fence runs to the end of its container)
      or indented (``key="indented"``) code block, at any depth.
    * ``table``: a GFM table (header row to its last row), at any depth.
    * ``hr``: a top-level thematic break.

    Each block runs from the start of its first line to just past its last line's newline.
    ``text`` is canonical (``\n`` newlines, as the readers make it). ``parser`` is one of :data:`PARSERS`; ``None`` takes :func:`default_parser`.
    """
    name = parser or default_parser()
    if name not in _ADAPTERS:
        raise ValueError(f"unknown Markdown parser {name!r}: one of {', '.join(PARSERS)}")
    found = _ADAPTERS[name](text[body_start:])
    return [Block(k, body_start + s, body_start + e, key, meta) for k, s, e, key, meta in found]


@cache
def available_parsers() -> tuple[str, ...]:
    """The parsers that import here, the compiled one first."""
    return tuple(name for name, load in ((PYRS, _pyrs), (PY, _py)) if _imports(load))


_chosen: str | None = None


def set_default_parser(name: str | None) -> None:
    """Make ``name`` the parser of every later parse in this process (``None``: back to the
    automatic choice). For tools that run the whole pipeline with one parser, such as
    ``bench/golden_chunks.py`` checked with the fallback; code that reads one file passes
    ``parser=`` instead."""
    global _chosen
    if name is not None and name not in PARSERS:
        raise ValueError(f"unknown Markdown parser {name!r}: one of {', '.join(PARSERS)}")
    _chosen = name


def default_parser() -> str:
    """The parser :func:`set_default_parser` chose, else the compiled one where it is installed
    (CPython ≤ 3.12), else the pure-Python one."""
    if _chosen is not None:
        return _chosen
    names = available_parsers()
    if not names:
        raise ImportError("no Markdown parser: pip install markdown-it-py (or markdown-it-pyrs on Python ≤ 3.12)")
    return names[0]


def _imports(load: Callable[[], Any]) -> bool:
    try:
        load()
    except ImportError:
        return False
    return True


def _snap(src: Any, s: int, e: int, nl: Any) -> tuple[int, int]:
    """A parser's span ``src[s:e]`` widened to whole lines: its first line's start, its last line's newline."""
    le = src.find(nl, max(e - 1, s))
    return src.rfind(nl, 0, s) + 1, len(src) if le < 0 else le + 1


def heading_title(inline: str) -> str:
    """A heading's plain text (``inline``: its inline content, markup dropped), whitespace collapsed
    and a trailing ``{#anchor}`` dropped."""
    title = " ".join(inline.split())
    return _ATTR_LIST.sub("", title) if title.endswith("}") else title


# -- markdown-it.rs -----------------------------------------------------------------------------
#
# Its nodes carry byte offsets into the body (UTF-8), converted here to characters.


@cache
def _pyrs() -> Any:
    from markdown_it_pyrs import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def _structure_pyrs(body: str) -> list[_Found]:
    src: str | bytes = body if body.isascii() else body.encode("utf-8")
    nl: Any = "\n" if isinstance(src, str) else b"\n"
    found: list[_Found] = []

    def add(kind: str, node: Any, key: str = "", meta: dict[str, Any] | None = None) -> None:
        if node.srcmap is None:  # markdown-it.rs maps every block node; never guess an offset
            raise ValueError(f"the Markdown parser gave no source position for a {node.name}")
        s, e = node.srcmap
        found.append((kind, *_snap(src, s, e, nl), key, meta or {}))

    def walk(nodes: Sequence[Any], top: bool) -> None:
        for node in nodes:
            name = node.name
            if name in _HEADINGS:
                if top:
                    add("heading", node, str(node.meta["level"]), {"title": heading_title(_pyrs_inline(node))})
            elif name == "fence" or name == "code_block":
                add("code", node, "fenced" if name == "fence" else "indented")
            elif name == "table":
                add("table", node)
            elif name == "hr":
                if top:
                    add("hr", node)
            elif name in _CONTAINERS:
                walk(node.children, False)

    walk(_pyrs().tree(body).children, True)
    if isinstance(src, bytes):  # the parser counts UTF-8 bytes; the canonical text counts characters
        chars = _chars_at(src, [x for f in found for x in f[1:3]])
        return [(k, chars[s], chars[e], key, meta) for k, s, e, key, meta in found]
    return found


def _chars_at(src: bytes, offsets: list[int]) -> dict[int, int]:
    """Character offset of each byte offset (each at a character boundary) of UTF-8 ``src``."""
    out: dict[int, int] = {}
    prev = chars = 0
    for off in sorted(set(offsets)):
        chars += len(src[prev:off].decode("utf-8"))
        out[off] = chars
        prev = off
    return out


def _pyrs_inline(node: Any) -> str:
    parts = []
    for child in node.children:
        name = child.name
        if name == "text" or name == "text_special":  # text_special: an entity or escape, resolved
            parts.append(child.meta.get("content", ""))
        elif name == "softbreak" or name == "hardbreak":
            parts.append(" ")
        elif name != "html_inline":  # code spans, emphasis, links, images (their alt text), autolinks
            parts.append(_pyrs_inline(child))
    return "".join(parts)


# -- markdown-it-py -----------------------------------------------------------------------------
#
# Block tokens carry line ranges ``map = [first, past_last)``. markdown-it.rs spans a block from
# its first line to the end of its last line, newline excluded, so a block whose last line is
# empty (an unclosed fence before blank lines) ends, once snapped, on the line before: the span
# is rebuilt the same way here. Inline rules are off for the body; heading lines are parsed
# inline afterwards with the body's reference definitions (``env``), as the core rule would.


@cache
def _py() -> Any:
    from markdown_it import MarkdownIt

    # no ``normalize``: the canonical text has ``\n`` newlines already, and a NUL stays a NUL in
    # a title as in markdown-it.rs (markdown-it-py would make it U+FFFD)
    md = MarkdownIt("commonmark").enable("table").disable(["normalize", "inline", "text_join"])
    # markdown-it.rs ends a table at a list item only where the item could interrupt a paragraph
    # (not empty; numbered from 1): markdown-it-py's list rule gets that rule inside tables too.
    rules = md.block.ruler.__rules__
    list_rule = next(r for r in rules if r.name == "list")
    list_fn, list_alt = list_rule.fn, list(list_rule.alt)

    def list_in_table(state: Any, start: int, end: int, silent: bool) -> bool:
        if silent and state.parentType == "table":
            state.parentType = "paragraph"
            try:
                return bool(list_fn(state, start, end, silent))
            finally:
                state.parentType = "table"
        return bool(list_fn(state, start, end, silent))

    md.block.ruler.at("list", list_in_table, {"alt": list_alt})
    md.normalizeLinkText = _as_written  # type: ignore[method-assign,assignment]
    return md


def _as_written(url: str) -> str:
    """An autolink's text as written (``%``-escapes kept), as markdown-it.rs gives it."""
    return url


def _structure_py(body: str) -> list[_Found]:
    md = _py()
    env: dict[str, Any] = {}
    tokens = md.parse(body, env)
    starts = [0, *(m.end() for m in re.finditer("\n", body))]  # line i starts at starts[i]
    found: list[_Found] = []

    # An unclosed fence runs to the end of its container. When the body's last line has no
    # newline and is blank inside that container, markdown-it.rs counts it and markdown-it-py
    # does not: the fence gets it back unless an enclosing block quote ended before it.
    tail = body[starts[-1] :]  # the last line when no newline ends it, else ""
    quotes: list[int] = []  # line past the end of each enclosing block quote

    def span(t: Any) -> tuple[int, int]:
        first, past = t.map
        last_end = starts[past] - 1 if past < len(starts) else len(body)  # the last line's end, newline excluded
        if (tail and t.type == "fence" and past == len(starts) - 1 and past - first == t.content.count("\n") + 1
                and not (tail.replace(">", "") if quotes else tail).strip() and all(q == len(starts) for q in quotes)):
            last_end = len(body)
        return _snap(body, starts[first], last_end, "\n")

    for i, t in enumerate(tokens):
        typ = t.type
        if typ == "blockquote_open":
            quotes.append(t.map[1])
        elif typ == "blockquote_close":
            quotes.pop()
        elif typ == "heading_open":
            if t.level == 0:
                inline = tokens[i + 1]
                children: list[Any] = []
                md.inline.parse(inline.content, md, env, children)
                found.append(("heading", *span(t), t.tag[1:], {"title": heading_title(_py_inline(children))}))
        elif typ == "fence" or typ == "code_block":
            found.append(("code", *span(t), "fenced" if typ == "fence" else "indented", {}))
        elif typ == "table_open":
            found.append(("table", *span(t), "", {}))
        elif typ == "hr":
            if t.level == 0:
                found.append(("hr", *span(t), "", {}))
    return found


def _py_inline(tokens: Sequence[Any]) -> str:
    parts = []
    for t in tokens:
        typ = t.type
        if typ == "text" or typ == "text_special" or typ == "code_inline":
            parts.append(t.content)
        elif typ == "softbreak" or typ == "hardbreak":
            parts.append(" ")
        elif typ == "image":  # its alt text, parsed
            parts.append(_py_inline(t.children or ()))
        # html_inline and the *_open / *_close of emphasis and links add nothing
    return "".join(parts)


_ADAPTERS: dict[str, Callable[[str], list[_Found]]] = {PYRS: _structure_pyrs, PY: _structure_py}
