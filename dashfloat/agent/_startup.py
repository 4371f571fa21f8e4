"""Building the agent's core at process start: journal, history, project instructions, resume."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from dashfloat.agent._core import APPROVE_ALL_WARNING, PLAN_NOTICE, AgentCore
from dashfloat.agent._journal import Journal, MemoryJournal, SessionJournal
from dashfloat.agent._options import AgentOptions
from dashfloat.agent.instructions import load_project_instructions
from dashfloat.agent.prompt_files import load_prompt_files
from dashfloat.protocol import SystemEntry
from dashfloat.sessions import log as session_log
from dashfloat.sessions.history import load_history

SANDBOX_OFF_NOTICE: Final = "commands are not sandboxed (--sandbox off): they run with your full permissions"
"""Said once at the start of a session whose commands were put outside the sandbox by name (flag or config)."""


def _resume(core: AgentCore, journal: SessionJournal, options: AgentOptions) -> None:
    try:
        if options.resume_id:
            path: Path | None = session_log.find_session(journal.sessions_dir, options.resume_id)
        else:
            skipped: list[str] = []
            path = session_log.newest_for_cwd(journal.sessions_dir, options.cwd, skipped)
            for line in skipped:  # it may have been this directory's newest (ADR 0058)
                core.outbox.append(("ui", SystemEntry(text=line, level="warning")))
        if path is None:
            # A restore starts nothing: it says why, and the core's refusal ("nothing to undo") follows.
            text = "no saved session for this directory" + ("" if options.restoring else ": starting a new one")
            core.outbox.append(("ui", SystemEntry(text=text)))
            return
        loaded = journal.open(path)
    except session_log.SessionLocked:
        raise  # never a new session instead: the start is refused (agent_process_main exits so)
    except (session_log.SessionError, OSError) as exc:
        core.outbox.append(("ui", SystemEntry(text=f"{exc}; starting a new session", level="error")))
        return
    for notice in loaded.notices:
        core.outbox.append(("ui", SystemEntry(text=notice, level="warning")))
    core.load(
        loaded.messages, [record.usage for record in loaded.usage], replay=options.replay, transcript=loaded.transcript
    )


def build_core(options: AgentOptions) -> AgentCore:
    """A ready core whose outbox starts with AgentReady, start-up notices and any resumed transcript."""
    journal: Journal
    instructions = load_project_instructions(Path(options.cwd))
    if options.state_dir:
        state = Path(options.state_dir)
        journal = SessionJournal(state, options.cwd, options.provider)
        core = AgentCore(options, journal, instructions.text)
        core.history = load_history(state / "history")
    else:
        journal = MemoryJournal()
        core = AgentCore(options, journal, instructions.text)
    core.prompt_files, prompt_problems = load_prompt_files(Path(options.cwd), os.environ)
    from dashfloat.agent._extensions import start_notices, start_skills  # hooks and skills (ADR 0088)

    skill_notes = start_skills(core, options)  # before the first request's size is counted; said after AgentReady
    core.outbox.append(("ui", core.ready_message()))
    core.show_context()  # the system prompt and the tools go with the first request: not 0 (a resume says more)
    for problem in prompt_problems:
        core.outbox.append(("ui", SystemEntry(text=problem, level="warning")))
    core.discover_window()
    if options.notice:
        core.outbox.append(("ui", SystemEntry(text=options.notice)))
    if options.approval == "all":
        core.outbox.append(("ui", SystemEntry(text=APPROVE_ALL_WARNING, level="warning")))
    elif options.approval == "plan":
        core.outbox.append(("ui", SystemEntry(text=PLAN_NOTICE)))
    if options.sandbox.unavailable:
        # Said once here, on the status bar, and in every command confirmation: never a silent claim.
        text = f"commands are NOT sandboxed: {options.sandbox.unavailable}; they run with your full permissions"
        core.outbox.append(("ui", SystemEntry(text=text, level="warning")))
    elif options.sandbox.mode == "off":
        # --sandbox off asked for by name (a container that is the boundary, bwrap unable to make namespaces there):
        # taken without a question, and said once, as the status bar and every confirmation say it too.
        core.outbox.append(("ui", SystemEntry(text=SANDBOX_OFF_NOTICE)))
    core.outbox += skill_notes + start_notices(core)
    if instructions.files:
        names = ", ".join(str(path) for path in instructions.files)
        core.outbox.append(("ui", SystemEntry(text=f"project instructions loaded from {names}")))
    for problem in instructions.problems:
        core.outbox.append(("ui", SystemEntry(text=problem, level="warning")))
    if isinstance(journal, SessionJournal) and (options.resume_id or options.continue_latest):
        _resume(core, journal, options)
    if core.hooks.hooks:
        from dashfloat.agent._extensions import session_started

        session_started(core, "resume" if options.resume_id or options.continue_latest else "startup")
    return core
