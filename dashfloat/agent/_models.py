"""/model with the server's own list (ADR 0077): what /model says, pure. The list is the window discovery's
``GET /models`` answer (``WindowFound.models``), asked once per session (``_context.MODELS_REQUEST_ID`` marks a
discovery the agent sends only to get it). The words are pure; ``pick``, ``set_effort`` and ``known`` are the flow the
core runs on /model and on the list's arrival (the core keeps its state: ``models``, ``listing``, ``unchecked``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Literal

import msgspec

from dashfloat.agent._context import MODELS_REQUEST_ID
from dashfloat.protocol import DiscoverWindow, ReasoningEffort, SetModel, ShowModels, SystemEntry

if TYPE_CHECKING:
    from dashfloat.agent._core import AgentCore

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


def set_effort(core: AgentCore, effort: ReasoningEffort | Literal["default"]) -> str:
    """/model …@EFFORT: the session's ``reasoning_effort`` (the next request's); says what it is now."""
    chosen = core.launch_effort if effort == "default" else effort
    core.provider = msgspec.structs.replace(core.provider, reasoning_effort=chosen)
    return effort_set(chosen, default=effort == "default")


def command(core: AgentCore, request: SetModel | ShowModels) -> None:
    """/model: the server's models listed (no name), a model picked (and its effort), or the effort alone."""
    match request:
        case ShowModels():
            pick(core, None)
        case SetModel(model=model, effort=effort) if model or effort is None:
            pick(core, model or None, effort)
        case SetModel(effort=effort):  # /model @EFFORT: the effort alone
            assert effort is not None  # the case above took None
            core.ui(SystemEntry(text=f"{set_effort(core, effort)} from the next request on"))
            core.ui(core.ready_message())


def pick(core: AgentCore, name: str | None, effort: ReasoningEffort | Literal["default"] | None = None) -> None:
    """/model [NAME] against the server's list. Not known yet: /model waits for it; /model NAME switches at once (a
    request may be on its way) and is checked when the list comes, by the new model's window discovery, which asks
    ``/models`` first, or by a question of its own."""
    provider = core.provider
    if name is None:
        if core.models is None:
            core.listing = True
            _ask(core)
            return
        core.ui(SystemEntry(text=listing(core.models, provider.model, provider.base_url)))
    elif core.models and name not in core.models:
        core.ui(SystemEntry(text=unknown(name, core.models, provider.model, provider.base_url), level="error"))
    else:
        previous, previous_effort = provider.model, provider.reasoning_effort
        core.provider = msgspec.structs.replace(provider, model=name)
        effort_words = "" if effort is None else f", {set_effort(core, effort)}"
        core.ui(SystemEntry(text=f"model set to {name}{effort_words} (from the next request on)"))
        if core.window.forget():
            core.calibration = None
            core.discover_window()
        if core.models is None:
            core.unchecked.append((name, previous, previous_effort))
            if not any(isinstance(message, DiscoverWindow) for _, message in core.outbox):
                _ask(core)  # no discovery went out to bring the list back
    core.ui(core.ready_message())


def _ask(core: AgentCore) -> None:
    if not core.models_asked:
        core.models_asked = True
        core.outbox.append(("llm", DiscoverWindow(request_id=MODELS_REQUEST_ID, provider=core.provider)))


def known(core: AgentCore, listed: list[str]) -> None:
    """The server's list came: a /model waiting for it is answered, a switch made before it is checked (and undone
    when the server does not list the model)."""
    core.models = listed
    unchecked, core.unchecked = core.unchecked, []
    for name, previous, previous_effort in unchecked:
        if listed and name not in listed and core.provider.model == name:
            core.provider = msgspec.structs.replace(core.provider, model=previous, reasoning_effort=previous_effort)
            core.ui(
                SystemEntry(text=unknown(name, listed, previous, core.provider.base_url, undone=True), level="error")
            )
            if core.window.forget():
                core.calibration = None
                core.discover_window()
    if core.listing:
        core.listing = False
        pick(core, None)
    elif unchecked:
        core.ui(core.ready_message())
