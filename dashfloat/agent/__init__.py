"""The Agent Manager process: the conversation, the tool loop, confirmations, cancellation."""

from typing import TYPE_CHECKING

from dashfloat._startup.lazy import lazy_exports

if TYPE_CHECKING:
    from dashfloat.agent._core import AgentCore, provider_message
    from dashfloat.agent._journal import Journal, MemoryJournal
    from dashfloat.agent._main import AGENT_EXIT_SESSION_IN_USE, agent_process_main
    from dashfloat.agent._options import AgentOptions
    from dashfloat.agent._process import AgentShell, Worker, Workers, serve
    from dashfloat.agent._steps import MAX_EPISODES_PER_TURN
    from dashfloat.agent._summary import RESULT_EXCERPT_MAX_LINES, result_excerpt, result_status
    from dashfloat.agent._workers import AGENT_PROCESS_NAME, EXECUTOR_PROCESS_NAME, LLM_PROCESS_NAME, ForkWorkers

__all__ = [
    "AGENT_EXIT_SESSION_IN_USE",
    "AGENT_PROCESS_NAME",
    "EXECUTOR_PROCESS_NAME",
    "LLM_PROCESS_NAME",
    "MAX_EPISODES_PER_TURN",
    "RESULT_EXCERPT_MAX_LINES",
    "AgentCore",
    "AgentOptions",
    "AgentShell",
    "ForkWorkers",
    "Journal",
    "MemoryJournal",
    "Worker",
    "Workers",
    "agent_process_main",
    "provider_message",
    "result_excerpt",
    "result_status",
    "serve",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "MAX_EPISODES_PER_TURN": "_steps",
        "AgentCore": "_core",
        "Journal": "_journal",
        "MemoryJournal": "_journal",
        "provider_message": "_core",
        "agent_process_main": "_main",
        "AGENT_EXIT_SESSION_IN_USE": "_main",
        "AgentOptions": "_options",
        "AgentShell": "_process",
        "Worker": "_process",
        "Workers": "_process",
        "serve": "_process",
        "RESULT_EXCERPT_MAX_LINES": "_summary",
        "result_excerpt": "_summary",
        "result_status": "_summary",
        "AGENT_PROCESS_NAME": "_workers",
        "EXECUTOR_PROCESS_NAME": "_workers",
        "LLM_PROCESS_NAME": "_workers",
        "ForkWorkers": "_workers",
    },
)
