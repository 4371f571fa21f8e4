"""Notices the UI words itself from what the agent said: the onboarding line, the /rewind list. Pure."""

from __future__ import annotations

from dashfloat.protocol import PromptsListed, SandboxState
from dashfloat.ui._text import format_count


def onboarding(model: str, window: int | None, sandbox: SandboxState | None) -> str:
    """The first screen's line with a real provider: what answers, how much it reads, how confined, three keys."""
    size = format_count(window) if window else "not known yet"  # as the status bar says it
    mode = sandbox.mode if sandbox is not None and not sandbox.unavailable else "off (not sandboxed)"
    return f"DashFloat · {model} · window {size} · sandbox {mode} · {ONBOARDING_KEYS}"


ONBOARDING_KEYS = "/help · Shift-Tab: modes · /quit"
"""The three keys the first screen names (issue 37)."""


PROMPT_LIST_MAX_CHARS = 70
"""One prompt's line in the /rewind list (whitespace collapsed, then cut)."""


def prompt_list(listed: PromptsListed) -> str:
    """The /rewind list: one numbered line per prompt, and how to use it."""
    if not listed.prompts:
        return "no prompts in this session yet: nothing to rewind to"
    lines = []
    for prompt in listed.prompts:
        text = " ".join(prompt.text.split())
        if len(text) > PROMPT_LIST_MAX_CHARS:
            text = text[: PROMPT_LIST_MAX_CHARS - 1] + "…"
        lines.append(f"{prompt.number:>3}  {text}")
    lines.append("/rewind N restores files and the conversation to just before prompt N (a preview asks first)")
    return "\n".join(lines)
