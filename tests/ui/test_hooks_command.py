"""/hooks in the TUI's command parser (ADR 0088)."""

from __future__ import annotations

from dashfloat.protocol import ShowHooks
from dashfloat.ui import _commands as commands


def test_hooks_lists_or_trusts_and_refuses_anything_else() -> None:
    assert commands.parse("/hooks") == commands.Send(ShowHooks())
    assert commands.parse("/hooks trust") == commands.Send(ShowHooks(trust=True))
    refused = commands.parse("/hooks everything")
    assert isinstance(refused, commands.Invalid) and "usage: /hooks [trust]" in str(refused)
    assert "/hooks" in commands.help_text()
