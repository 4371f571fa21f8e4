"""One small Theme of named roles (the seed's warm-dim palette), and its NO_COLOR form."""

from __future__ import annotations

from dataclasses import dataclass

from prompt_toolkit.styles import BaseStyle, Style, merge_styles, style_from_pygments_cls
from pygments.styles import get_style_by_name

PYGMENTS_STYLE = "gruvbox-dark"
"""A warm palette that sits with the roles below."""


@dataclass(frozen=True)
class Theme:
    """Colours for the named roles; every other class derives from one of them."""

    accent: str = "#d7875f"
    inline_code: str = "#d7af5f"
    dim: str = "#8a8a8a"
    tool: str = "#d7af00"
    error: str = "#d75f5f"

    def style(self, no_color: bool) -> BaseStyle:
        """The prompt_toolkit style; with ``no_color`` only attributes (bold, italic...) remain."""

        def c(colour: str) -> str:
            return "" if no_color else f"fg:{colour}"

        rules = [
            ("accent", f"{c(self.accent)} bold"),
            ("inline_code", f"{c(self.inline_code)}"),
            ("dim", f"{c(self.dim)}"),
            ("tool", f"{c(self.tool)} bold"),
            ("tool.name", "bold"),
            ("error", f"{c(self.error)} bold"),
            ("warning", f"{c(self.tool)}"),
            ("user", "bold"),
            ("user.mark", f"{c(self.accent)} bold"),
            ("reasoning", f"{c(self.dim)} italic"),
            ("md.heading", f"{c(self.accent)} bold"),
            ("md.h1", "underline"),
            ("md.strong", "bold"),
            ("md.em", "italic"),
            ("md.strike", "strike"),
            ("md.link", f"{c(self.accent)} underline"),
            ("md.marker", f"{c(self.accent)}"),
            ("md.quote", "italic"),
            ("md.quote.bar", f"{c(self.dim)}"),
            ("diff.add", f"{c(self.inline_code)}"),
            # Removed lines must not read as context: the error hue in colour, struck through without colour.
            ("diff.del", "strike" if no_color else f"{c(self.error)}"),
            ("status", f"{c(self.dim)}"),
            ("status.sep", f"{c(self.dim)}"),
            ("status.idle", f"{c(self.dim)}"),
            ("prompt", f"{c(self.accent)} bold"),
            ("hint", f"{c(self.dim)} italic"),
        ]
        own = Style(rules)
        if no_color:
            return own
        return merge_styles([style_from_pygments_cls(get_style_by_name(PYGMENTS_STYLE)), own])
