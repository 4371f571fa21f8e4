"""Notifications for a user who may be looking elsewhere: the bell, and OSC 9 / OSC 777 where understood.

Pure: the bytes to write are a function of the text and the environment (the UI reads no files).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

NOTIFY_LONG_TURN_S: Final = 10.0
"""A turn that ran at least this long notifies when it ends (a short one is watched anyway)."""
NOTIFY_MAX_CHARS: Final = 120
"""Characters of a notification's text (desktop notifications are one line)."""

BELL: Final = "\x07"
# Terminals that show OSC 9 as a desktop notification (iTerm2, WezTerm, Ghostty, Windows Terminal).
_OSC9_PROGRAMS: Final = frozenset({"iTerm.app", "WezTerm", "ghostty"})


def osc_flavour(env: Mapping[str, str]) -> str | None:
    """Which notification escape this terminal understands: "9", "777", or None (the bell only)."""
    if env.get("TMUX"):  # tmux swallows OSC 9/777 unless passthrough is set up: the bell still reaches it
        return None
    if env.get("TERM_PROGRAM") in _OSC9_PROGRAMS or env.get("WT_SESSION"):
        return "9"
    term = env.get("TERM", "")
    if env.get("VTE_VERSION") or term.startswith(("foot", "rxvt-unicode")):
        return "777"
    return None


def notification(text: str, env: Mapping[str, str]) -> str:
    """The characters to write: the bell, then the OSC form of ``text`` when the terminal has one."""
    clean = "".join(ch if ch.isprintable() else " " for ch in text)[:NOTIFY_MAX_CHARS].replace(";", ",")
    match osc_flavour(env):
        case "9":
            return f"{BELL}\x1b]9;{clean}{BELL}"
        case "777":
            return f"{BELL}\x1b]777;notify;DashFloat;{clean}{BELL}"
        case _:
            return BELL
