"""Markdown source -> screen rows (pure): markdown-it-py parses, pygments highlights code blocks.

markdown-it-py and pygments' lexers are imported by the first document rendered, not with the UI: a TUI that has
shown no answer yet never needs them (~1.5 MB of the main process's memory, issue 19; docs/decisions/0042). pygments'
package itself comes with the first code block's lexer (ADR 0056).
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import TYPE_CHECKING

from dashfloat.ui._text import Fragment, Row, clip, hard_break, indent, row_width, sanitize, width_of, wrap

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.tree import SyntaxTreeNode
    from pygments.lexer import Lexer

MARKDOWN_CACHE_ENTRIES = 256
"""Rendered blocks kept per (source, width): the live region re-renders the same open block each tick."""
CODE_INDENT = "  "
MIN_TABLE_COLUMN = 3


@functools.cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


@functools.lru_cache(maxsize=MARKDOWN_CACHE_ENTRIES)
def render_markdown(source: str, width: int) -> tuple[Row, ...]:
    """Rows for a Markdown document at ``width`` columns (raw HTML is shown as text)."""
    if _PLAIN_PARAGRAPH.fullmatch(source):
        # A streamed paragraph is rendered twice a tick (the whole, then the rest after a cut, ADR 0040): text that
        # no Markdown rule can act on is one paragraph of itself, so it needs no parse (tests/ui/test_fast_paths.py).
        return tuple(wrap([("", source)], max(8, width)))
    return render_parsed(source, width)


_PLAIN_PARAGRAPH = re.compile(r"[A-Za-z](?:[A-Za-z0-9 ,.;:?!'()]*[A-Za-z0-9,.;:?!'()])?")
"""One line that Markdown leaves as it is: no markup character, no line break, nothing that opens a block at its
start (a letter first: not an indent, list number or marker), no space at either end (a paragraph strips them)."""


def render_parsed(source: str, width: int) -> tuple[Row, ...]:
    """``render_markdown`` by the parser, for any source."""
    from markdown_it.tree import SyntaxTreeNode

    tree = SyntaxTreeNode(_parser().parse(sanitize(source)))
    return tuple(_blocks(tree.children, max(8, width), tight=False))


def _blocks(nodes: list[SyntaxTreeNode], width: int, tight: bool) -> list[Row]:
    rows: list[Row] = []
    for i, node in enumerate(nodes):
        if i and not tight:
            rows.append(())
        rows.extend(_block(node, width))
    return rows


def _block(node: SyntaxTreeNode, width: int) -> list[Row]:
    match node.type:
        case "paragraph":
            return wrap(_inline(node, ""), width)
        case "heading":
            level = int(node.tag[1:])
            style = "class:md.heading class:md.h1" if level == 1 else "class:md.heading"
            return wrap(_inline(node, style), width)
        case "bullet_list" | "ordered_list":
            return _list(node, width)
        case "blockquote":
            inner = _blocks(node.children, width - 2, tight=False)
            bar: Fragment = ("class:md.quote.bar", "│ ")
            return [(bar, *((f"class:md.quote {s}", t) for s, t in row)) for row in inner]
        case "fence" | "code_block":
            return _code(node.content, node.info.strip() if node.type == "fence" else "", width)
        case "hr":
            return [(("class:dim", "─" * width),)]
        case "table":
            return _table(node, width)
        case "html_block":
            return wrap([("", node.content.rstrip("\n"))], width)
        case _:
            # Containers markdown-it may add later: render what they hold rather than drop it.
            return _blocks(node.children, width, tight=False) if node.children else []


def _inline(node: SyntaxTreeNode, style: str) -> list[Fragment]:
    out: list[Fragment] = []
    for child in node.children:
        if child.type == "inline":
            out.extend(_spans(child.children, style))
    return out


def _spans(nodes: list[SyntaxTreeNode], style: str) -> list[Fragment]:
    # Character references (&#9; &#12; &#x202E;) are decoded by the parser, after the source was sanitized:
    # every text that reaches a row is sanitized again here, so no control or bidi character reaches the terminal.
    return [(fragment_style, sanitize(text)) for fragment_style, text in _raw_spans(nodes, style)]


def _raw_spans(nodes: list[SyntaxTreeNode], style: str) -> list[Fragment]:
    out: list[Fragment] = []
    for node in nodes:
        match node.type:
            case "text" | "html_inline":
                out.append((style, node.content))
            case "softbreak":
                out.append((style, " "))
            case "hardbreak":
                out.append((style, "\n"))
            case "code_inline":
                out.append((f"{style} class:inline_code".strip(), node.content))
            case "strong":
                out.extend(_raw_spans(node.children, f"{style} class:md.strong".strip()))
            case "em":
                out.extend(_raw_spans(node.children, f"{style} class:md.em".strip()))
            case "s":
                out.extend(_raw_spans(node.children, f"{style} class:md.strike".strip()))
            case "link":
                text = _raw_spans(node.children, f"{style} class:md.link".strip())
                out.extend(text)
                href = str(node.attrs.get("href", ""))
                if href and href != "".join(t for _, t in text):
                    out.append(("class:dim", f" ({href})"))
            case "image":
                out.append(("class:dim", f"[image: {node.content or node.attrs.get('src', '')}]"))
            case _:
                out.extend(_raw_spans(node.children, style))
    return out


def _list(node: SyntaxTreeNode, width: int) -> list[Row]:
    ordered = node.type == "ordered_list"
    start = int(node.attrs.get("start", 1)) if ordered else 1
    items = node.children
    marker_width = len(f"{start + len(items) - 1}. ") if ordered else 2
    tight = all(p.hidden for item in items for p in item.children if p.type == "paragraph")
    rows: list[Row] = []
    for n, item in enumerate(items):
        if n and not tight:
            rows.append(())
        marker = f"{start + n}.".ljust(marker_width) if ordered else "• "
        inner = _blocks(item.children, width - marker_width, tight=tight) or [()]
        rows.extend(indent(inner, ("class:md.marker", marker), ("", " " * marker_width)))
    return rows


@functools.cache
def _builtin_aliases() -> frozenset[str]:
    from pygments.lexers._mapping import LEXERS

    return frozenset(alias for (_, _, aliases, _, _) in LEXERS.values() for alias in aliases)


@functools.lru_cache(maxsize=64)
def _lexer(language: str) -> Lexer:
    # pygments' own lexers only: get_lexer_by_name would scan installed plugins' entry points (file I/O on the
    # UI loop) for every unknown fence language. Importing a built-in lexer's module the first time is accepted.
    from pygments.lexers import TextLexer, get_lexer_by_name
    from pygments.util import ClassNotFound

    alias = language.lower()
    lexer: Lexer = TextLexer(stripnl=False, ensurenl=False)
    if alias in _builtin_aliases():
        with contextlib.suppress(ClassNotFound):
            lexer = get_lexer_by_name(alias, stripnl=False, ensurenl=False)
    return lexer


CODE_CHUNK_LINES = 64
"""Code is highlighted in chunks of this many lines, each cached: a block that grows while it streams costs
only its last chunk per frame, not the whole block (the lexer restarts at chunk boundaries, which can only
miscolour a construct that spans one)."""
CODE_CHUNK_CACHE_ENTRIES = 1024


def _code(content: str, info: str, width: int) -> list[Row]:
    language = (info.split()[0] if info else "") or "text"
    lines = content.rstrip("\n").split("\n")
    rows: list[Row] = []
    for start in range(0, len(lines), CODE_CHUNK_LINES):
        rows.extend(_code_chunk("\n".join(lines[start : start + CODE_CHUNK_LINES]), language, width))
    return rows


@functools.lru_cache(maxsize=CODE_CHUNK_CACHE_ENTRIES)
def _code_chunk(chunk: str, language: str, width: int) -> tuple[Row, ...]:
    lexer = _lexer(language)
    lines: list[list[Fragment]] = [[]]
    for token, text in lexer.get_tokens(chunk):
        style = _token_class(token)
        for n, part in enumerate(text.split("\n")):
            if n:
                lines.append([])
            if part:
                lines[-1].append((style, part))
    rows: list[Row] = []
    room = width - len(CODE_INDENT)
    prefix: Fragment = ("class:md.code", CODE_INDENT)
    for line in lines:
        # Code keeps its spaces: break long lines by columns, never reflow them.
        rows.extend((prefix, *row) for row in hard_break(line, room))
    return tuple(rows)


def _token_class(token: object) -> str:
    """``class:pygments.keyword.namespace`` for a pygments token type (the Theme styles them)."""
    from pygments.token import Token  # imported with the lexer that made ``token`` already: a lookup

    parts: list[str] = []
    t = token
    while t is not Token and t is not None:
        parts.append(str(t).rsplit(".", 1)[-1].lower())
        t = getattr(t, "parent", None)
    return "class:md.code class:pygments." + ".".join(reversed(parts)) if parts else "class:md.code"


def _table(node: SyntaxTreeNode, width: int) -> list[Row]:
    grid: list[list[list[Fragment]]] = []
    header_rows = 0
    for section in node.children:
        for tr in section.children:
            cells = [_cell(td, "class:md.strong" if section.type == "thead" else "") for td in tr.children]
            grid.append(cells)
            header_rows += section.type == "thead"
    if not grid:
        return []
    ncols = max(len(r) for r in grid)
    for r in grid:
        r.extend([] for _ in range(ncols - len(r)))
    widths = [max(MIN_TABLE_COLUMN, *(width_of("".join(t for _, t in r[c])) for r in grid)) for c in range(ncols)]
    sep = 3 * (ncols - 1)
    # Shrink the widest column until the table fits; cells then wrap inside their column.
    while sum(widths) + sep > width and max(widths) > MIN_TABLE_COLUMN:
        widths[widths.index(max(widths))] -= 1
    rows: list[Row] = []
    for n, cells in enumerate(grid):
        wrapped = [wrap(cell, widths[c]) for c, cell in enumerate(cells)]
        for k in range(max(len(w) for w in wrapped)):
            row: list[Fragment] = []
            for c, w in enumerate(wrapped):
                if c:
                    row.append(("class:dim", " │ "))
                part = w[k] if k < len(w) else ()
                row.extend(part)
                pad = widths[c] - row_width(part)
                if pad > 0 and c < ncols - 1:
                    row.append(("", " " * pad))
            rows.append(tuple(row))
        if n == header_rows - 1:
            rows.append((("class:dim", "─┼─".join("─" * w for w in widths)),))
    return [r if row_width(r) <= width else ((("", clip("".join(t for _, t in r), width)),)) for r in rows]


def _cell(node: SyntaxTreeNode, style: str) -> list[Fragment]:
    out: list[Fragment] = []
    for child in node.children:
        if child.type == "inline":
            out.extend(_spans(child.children, style))
    return out
