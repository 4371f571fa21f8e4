"""/model with the server's own list (ADR 0077): what /model says, pure. The list is the window discovery's
``GET /models`` answer (``WindowFound.models``), asked once per session (``_core.MODELS_REQUEST_ID`` marks a
discovery the agent sends only to get it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

MODELS_SHOWN_MAX: Final = 40
"""Names one /model line shows before "and N more" (completion offers them all)."""


def _names(models: Sequence[str], current: str) -> list[str]:
    shown = [f"{'*' if name == current else ' '} {name}" for name in models[:MODELS_SHOWN_MAX]]
    if len(models) > MODELS_SHOWN_MAX:
        shown.append(f"  and {len(models) - MODELS_SHOWN_MAX} more (type /model and a few letters to complete)")
    return shown


def listing(models: Sequence[str], current: str, base_url: str) -> str:
    """/model's answer: the server's models, the one in use marked."""
    if not models:
        return f"the server at {base_url} lists no models (GET /models); /model NAME uses NAME unchecked"
    return "\n".join([f"models at {base_url} (* in use; /model NAME picks one):", *_names(models, current)])


def unknown(name: str, models: Sequence[str], current: str, base_url: str, undone: bool = False) -> str:
    """/model NAME for a name the server does not list: refused (``undone``: switched back), with the list."""
    using = f"back to {current}" if undone else f"still using {current}"
    head = f"/model {name}: the server at {base_url} lists no such model; {using}. It lists:"
    return "\n".join([head, *_names(models, current)])


def effort_set(effort: str | None, default: bool) -> str:
    """What ``/model …@EFFORT`` made of the session's reasoning effort (``default``: the launch's came back)."""
    if effort is None:
        return "reasoning effort back to the model's own (none sent)"
    sent = "thinking off" if effort == "none" else "sent as reasoning_effort"
    return f"reasoning effort {'back to ' if default else ''}{effort} ({sent})"
