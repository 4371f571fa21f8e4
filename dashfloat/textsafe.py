"""Text from the model or from files made safe for a terminal: one rule for the TUI and headless stderr.

Tool names, arguments and outputs must not be able to move the cursor, clear the screen or forge lines.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Final

TAB_WIDTH: Final = 4


def defuse(text: str, *, keep_newlines: bool, keep_invisible: Callable[[str], bool] | None = None) -> str:
    """Tabs to spaces, control characters to caret form (``^[``), other invisible characters dropped.

    ``keep_newlines`` leaves ``\\n`` as a line break (the TUI wraps by it); ``keep_invisible`` may keep a
    non-printable character that still takes columns (the TUI measures widths exactly).
    """
    if text.isprintable() or (keep_newlines and text.replace("\n", "").isprintable()):
        return text  # in C: the loop below costs ~1 µs a character (a streamed code block is sanitised per frame)
    out: list[str] = []
    for ch in text.expandtabs(TAB_WIDTH):
        if ch.isprintable() or ch == " " or (keep_newlines and ch == "\n"):
            out.append(ch)
        elif unicodedata.category(ch) == "Cc":
            out.append("^" + chr((ord(ch) + 64) % 128))
        elif keep_invisible is not None and keep_invisible(ch):
            out.append(ch)
    return "".join(out)
