"""One small Theme of named roles (the seed's warm-dim palette), and its NO_COLOR form."""

from __future__ import annotations

from typing import Final

import msgspec
from prompt_toolkit.styles import BaseStyle, Style, merge_styles

PYGMENTS_STYLE: Final = "gruvbox-dark"
"""A warm palette that sits with the roles below: highlighted code is coloured as pygments' style of this name."""

CODE_PALETTE: Final = (
    ("pygments", "#dddddd"),
    ("pygments.comment", "italic #928374"),
    ("pygments.comment.preproc", "#8ec07c"),
    ("pygments.comment.special", "bold italic #ebdbb2"),
    ("pygments.keyword", "#fb4934"),
    ("pygments.operator.word", "#fb4934"),
    ("pygments.literal.string", "#b8bb26"),
    ("pygments.literal.string.escape", "#fe8019"),
    ("pygments.literal.number", "#d3869b"),
    ("pygments.name.builtin", "#fe8019"),
    ("pygments.name.variable", "#83a598"),
    ("pygments.name.constant", "#d3869b"),
    ("pygments.name.class", "#8ec07c"),
    ("pygments.name.function", "#8ec07c"),
    ("pygments.name.namespace", "#8ec07c"),
    ("pygments.name.exception", "#fb4934"),
    ("pygments.name.tag", "#8ec07c"),
    ("pygments.name.attribute", "#fabd2f"),
    ("pygments.name.decorator", "#fb4934"),
    ("pygments.generic.heading", "bold #ebdbb2"),
    ("pygments.generic.subheading", "underline #ebdbb2"),
    ("pygments.generic.deleted", "bg:#fb4934 #282828"),
    ("pygments.generic.inserted", "bg:#b8bb26 #282828"),
    ("pygments.generic.error", "#fb4934"),
    ("pygments.generic.emph", "italic"),
    ("pygments.generic.strong", "bold"),
    ("pygments.generic.emphstrong", "bold italic"),
    ("pygments.generic.prompt", "#a89984"),
    ("pygments.generic.output", "#f2e5bc"),
    ("pygments.generic.traceback", "#fb4934"),
    ("pygments.error", "bg:#fb4934 #282828"),
)
"""``PYGMENTS_STYLE``'s rules for the ``class:pygments.*`` fragments of highlighted code, as prompt_toolkit's
``style_from_pygments_cls`` makes them (its empty rules left out: they change nothing). Written here rather than
built at start-up: pygments' style machinery (its style table, its utilities with the HTML entities, the style's
class) is ~0.8 MB of the main process that the TUI never otherwise needs (issue 19, ADR 0046). A test holds the
table equal to pygments' own."""


class Theme(msgspec.Struct, frozen=True):
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
            # The approval modes other than ask (issue 37); without colour, attributes still set them apart.
            ("status.mode.edits", f"{c(self.tool)} bold"),
            ("status.mode.plan", f"{c(self.accent)} bold"),
            ("status.mode.all", f"{c(self.error)} bold reverse" if not no_color else "bold reverse"),
            ("queued", f"{c(self.accent)}"),
            ("prompt", f"{c(self.accent)} bold"),
            ("hint", f"{c(self.dim)} italic"),
        ]
        own = Style(rules)
        if no_color:
            return own
        return merge_styles([Style(list(CODE_PALETTE)), own])
