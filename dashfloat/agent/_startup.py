"""Building the agent's core at process start: journal, project instructions, resume."""

from __future__ import annotations

from dashfloat.agent._core import AgentCore, Journal, MemoryJournal
from dashfloat.agent._options import AgentOptions
from dashfloat.protocol import SystemEntry


def open_journal(options: AgentOptions) -> Journal:
    """The session log when persistence is on, else a memory-only journal."""
    return MemoryJournal()


def build_core(options: AgentOptions) -> AgentCore:
    """A ready core whose outbox starts with AgentReady (and any start-up notices)."""
    core = AgentCore(options, open_journal(options))
    core.outbox.append(("ui", core.ready_message()))
    if options.notice:
        core.outbox.append(("ui", SystemEntry(text=options.notice)))
    return core
