"""Hooks and skills in the agent (ADR 0088): what the start says of them, and ``/hooks`` (list, trust).

The hooks themselves run in the executor (each call's with its ``RunTool``); the skills' index is part of the
system prompt (``_prompt.system_message``). Imported at start only (``_startup``) and by ``/hooks``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final

from dashfloat.hooks import HookEvent, describe, event_payload, trust, trusted
from dashfloat.protocol import HooksRan, Message, RunHooks, SystemEntry
from dashfloat.skills import load_skills

if TYPE_CHECKING:
    from dashfloat.agent._core import AgentCore, Dest
    from dashfloat.agent._options import AgentOptions

UNTRUSTED: Final = (
    "{path}: {count} project hooks NOT run: they are commands this repository asks to run. /hooks lists them; "
    "/hooks trust runs them from now on (asked again whenever the file changes)"
)


def start_skills(core: AgentCore, options: AgentOptions) -> list[tuple[Dest, Message]]:
    """Find the skills (their index joins the system prompt); what could not be used is told."""
    core.skills, problems = load_skills(options.cwd, os.environ)
    out: list[tuple[Dest, Message]] = [("ui", SystemEntry(text=problem, level="warning")) for problem in problems]
    if core.skills:
        names = ", ".join(skill.name for skill in core.skills)
        out.append(("ui", SystemEntry(text=f"skills listed for the model: {names}")))
    return out


def start_notices(core: AgentCore) -> list[tuple[Dest, Message]]:
    """A project's hooks that are not trusted (for this content) are said, never run: headless too."""
    project = core.project_hooks
    if project is None or not project.hooks.hooks or trusted(core.state_dir, project):
        return []
    text = UNTRUSTED.format(path=project.path, count=len(project.hooks.hooks))
    return [("ui", SystemEntry(text=text, level="warning"))]


def hooks_command(core: AgentCore, trust_now: bool) -> list[tuple[Dest, Message]]:
    """``/hooks``: the hooks in force and the project's not trusted; ``/hooks trust``: trust the project's file as
    read at start, remembered for its content, and run its hooks from the next call on."""
    project = core.project_hooks
    running = project is not None and all(hook in core.hooks.hooks for hook in project.hooks.hooks)
    if trust_now:
        if project is None or not project.hooks.hooks:
            return [("ui", SystemEntry(text="/hooks trust: this project has no hooks file (.dashfloat/hooks.toml)"))]
        if not core.state_dir:
            text = "/hooks trust: nothing is remembered in this session (no state directory): not trusted"
            return [("ui", SystemEntry(text=text, level="error"))]
        if not running:
            trust(core.state_dir, project)
            core.hooks = core.hooks + project.hooks
        lines = describe(project.hooks)
        text = f"trusted {project.path} as it is now; its hooks run from the next call on:\n" + "\n".join(lines)
        return [("ui", SystemEntry(text=text, level="warning"))]
    lines = describe(core.hooks) or ["no hooks run in this session"]
    if project is not None and project.hooks.hooks and not running:
        lines += [f"not trusted, not run ({project.path}; /hooks trust runs them):", *describe(project.hooks)]
    return [("ui", SystemEntry(text="\n".join(lines)))]


# ---------------------------------------------------------------- hooks that name no tool, run by the executor


def _run(core: AgentCore, event: HookEvent, payload: bytes) -> bool:
    """Send ``event``'s hooks to the executor (False: it has none); their HooksRan comes back by ref."""
    hooks = core.hooks.for_event(event)
    if not hooks:
        return False
    core.hook_ref += 1
    core.hook_runs[core.hook_ref] = event
    run = RunHooks(ref=core.hook_ref, event=event, hooks=hooks, payload=payload.decode())
    core.outbox.append(("executor", run))
    return True


def session_started(core: AgentCore, source: str) -> None:
    """SessionStart (``startup`` or ``resume``): what its hooks add goes to the model with the first prompt."""
    _run(core, "SessionStart", event_payload("SessionStart", core.journal.session_id, core.cwd, source=source))


def prompt_submitted(core: AgentCore, text: str) -> bool:
    """UserPromptSubmit for ``text``; whether the prompt must wait (its hooks, or a session start's, still run)."""
    payload = event_payload("UserPromptSubmit", core.journal.session_id, core.cwd, prompt=text)
    _run(core, "UserPromptSubmit", payload)
    return bool(core.hook_runs)


def turn_stopped(core: AgentCore, outcome: str) -> None:
    """Stop: the turn ended (``outcome``); its hooks report to the user, they never continue the turn."""
    payload = event_payload("Stop", core.journal.session_id, core.cwd, stop_hook_active=False, outcome=outcome)
    _run(core, "Stop", payload)


def hooks_ran(core: AgentCore, ran: HooksRan) -> HooksRan | None:
    """A hook run answered: its notices shown, a session start's context kept for the next prompt; the answer when
    it was a prompt's (the turn acts on it), else None."""
    event = core.hook_runs.pop(ran.ref, None)
    for notice in ran.notices:
        core.ui(SystemEntry(text=notice, level="warning"))
    if event == "SessionStart" and ran.context:
        core.pending_context.append(ran.context)
    return ran if event == "UserPromptSubmit" else None
