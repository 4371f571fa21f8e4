"""``@path`` mentions: where they are in a prompt and how a path is written as one (the UI and the agent share it).

A mention starts with ``@`` at the start of the text or after whitespace (``a@b.com`` is no mention). Its path
is either bare, ``@src/app.py``, up to the next whitespace (trailing sentence punctuation is not part of it:
``explain @README.md.`` names ``README.md``), or quoted, ``@"my notes.md"``, where ``\\"`` and ``\\\\`` stand
for ``"`` and ``\\``. A path that a bare mention would not carry whole is always written quoted.
"""

from __future__ import annotations

from typing import Final

import msgspec

ATTACHMENTS_LINE: Final = "[DashFloat attached what the @mentions above name:]"
"""The line between the prompt as typed and its attachments (a rewind gives back only what is above it)."""


PIPED_BLOCK_START: Final = "\n\n<stdin>\n"
"""Where what was piped into a headless run starts (``piped_input.with_piped``): text that is no prompt, whose
``@`` words (a log's ``cc @alice``, a page's ``@.env``) are not mentions."""


def mention_text(prompt: str) -> str:
    """The part of a prompt whose ``@`` words are mentions: all of it but a piped block."""
    return prompt.split(PIPED_BLOCK_START, 1)[0]


def typed_prompt(content: str) -> str:
    """The prompt of a user message as it was typed (and !command outputs before it), without attachments."""
    return content.split(f"\n\n{ATTACHMENTS_LINE}", 1)[0]


TRAILING_PUNCTUATION: Final = ".,;:!?)]}'\""
"""Characters a bare mention does not end with: they end the sentence around it (a path ending in one is
written quoted)."""


class Mention(msgspec.Struct, frozen=True):
    """One complete mention: the path it names and where it stands in the text (``text[start:end]``)."""

    path: str
    start: int
    end: int


class Partial(msgspec.Struct, frozen=True):
    """The mention being typed at the cursor: ``query`` so far, starting at ``start`` (its ``@``)."""

    query: str
    start: int
    quoted: bool


def _starts_mention(text: str, i: int) -> bool:
    return text[i] == "@" and (i == 0 or text[i - 1].isspace())


def _scan_quoted(text: str, i: int) -> tuple[str, int, bool]:
    """From the opening quote at ``i``: (the path so far, the index after it, whether the quote closed)."""
    out: list[str] = []
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\" and j + 1 < len(text) and text[j + 1] in '"\\':
            out.append(text[j + 1])
            j += 2
        elif ch == '"':
            return "".join(out), j + 1, True
        else:
            out.append(ch)
            j += 1
    return "".join(out), j, False


def _scan_bare(text: str, i: int) -> int:
    """From ``i``: the index of the next whitespace (or the end)."""
    j = i
    while j < len(text) and not text[j].isspace():
        j += 1
    return j


def find_mentions(text: str) -> list[Mention]:
    """Every complete mention in ``text``, in order (an unclosed quote or a bare ``@`` is none)."""
    found: list[Mention] = []
    i = 0
    while i < len(text):
        if not _starts_mention(text, i):
            i += 1
            continue
        if i + 1 < len(text) and text[i + 1] == '"':
            path, end, closed = _scan_quoted(text, i + 1)
            if closed and path:
                found.append(Mention(path, i, end))
            i = end
            continue
        end = _scan_bare(text, i + 1)
        path = text[i + 1 : end].rstrip(TRAILING_PUNCTUATION)
        if path:
            found.append(Mention(path, i, i + 1 + len(path)))
        i = end
    return found


def partial_at(before_cursor: str) -> Partial | None:
    """The mention the cursor is typing: ``before_cursor`` ends inside one (bare, or quoted and not closed)."""
    i = 0
    current: Partial | None = None
    while i < len(before_cursor):
        if not _starts_mention(before_cursor, i):
            i += 1
            continue
        if i + 1 < len(before_cursor) and before_cursor[i + 1] == '"':
            path, end, closed = _scan_quoted(before_cursor, i + 1)
            current = None if closed else Partial(path, i, quoted=True)
        else:
            end = _scan_bare(before_cursor, i + 1)
            bare = end == len(before_cursor)
            current = Partial(before_cursor[i + 1 : end], i, quoted=False) if bare else None
        i = end
    return current


def needs_quotes(path: str) -> bool:
    """Whether a bare mention would not carry ``path`` whole."""
    return (
        path == ""
        or any(ch.isspace() for ch in path)
        or path[0] == '"'
        or path[-1] in TRAILING_PUNCTUATION
        or "\\" in path
    )


def format_mention(path: str, closed: bool = True) -> str:
    """``path`` written as a mention; ``closed=False`` leaves a quote open (a directory the user goes on typing in)."""
    if not needs_quotes(path):
        return f"@{path}"
    escaped = path.replace("\\", "\\\\").replace('"', '\\"')
    return f'@"{escaped}"' if closed else f'@"{escaped}'
