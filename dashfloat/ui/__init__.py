"""The terminal UI: a pure core (``state``, ``render``) inside a thin prompt_toolkit shell."""

from dashfloat.ui._app import TICK_S, AgentLink, TuiShell, UiOptions, run_tui
from dashfloat.ui._theme import Theme

__all__ = ["TICK_S", "AgentLink", "Theme", "TuiShell", "UiOptions", "run_tui"]
