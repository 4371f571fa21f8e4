"""The terminal UI: a pure core (``state``, ``render``) inside a thin prompt_toolkit shell."""

# First, before prompt_toolkit: its import without the modules this process never uses (_imports, ADR 0046).
from dashfloat._startup import prompt_toolkit_import  # noqa: F401

# isort: split

from dashfloat.ui._app import TICK_S, AgentLink, TuiShell, UiOptions, run_tui
from dashfloat.ui._frames import FRAME_MARKS_ENV, read_frame_marks
from dashfloat.ui._theme import Theme

__all__ = ["FRAME_MARKS_ENV", "TICK_S", "AgentLink", "Theme", "TuiShell", "UiOptions", "read_frame_marks", "run_tui"]
