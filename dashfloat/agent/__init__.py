"""The Agent Manager process: the conversation, the tool loop, confirmations, cancellation."""

from dashfloat.agent._core import MAX_EPISODES_PER_TURN, AgentCore, Journal, MemoryJournal
from dashfloat.agent._options import AgentOptions
from dashfloat.agent._process import AgentShell, Worker, Workers, serve
from dashfloat.agent._summary import RESULT_EXCERPT_MAX_LINES, result_excerpt, result_status

__all__ = [
    "MAX_EPISODES_PER_TURN",
    "RESULT_EXCERPT_MAX_LINES",
    "AgentCore",
    "AgentOptions",
    "AgentShell",
    "Journal",
    "MemoryJournal",
    "Worker",
    "Workers",
    "result_excerpt",
    "result_status",
    "serve",
]
