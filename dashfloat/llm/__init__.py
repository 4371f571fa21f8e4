"""The LLM stream process: OpenAI-compatible streaming, tool-call assembly, failure taxonomy, bounds.

Exports are imported on first use: ``serve`` must not import ``requests`` (the process imports it on a thread of
its own while it already serves, ADR 0045).
"""

from typing import TYPE_CHECKING

from dashfloat._startup.lazy import lazy_exports

if TYPE_CHECKING:
    from dashfloat.llm._errors import Kind as FailureKind
    from dashfloat.llm._limits import (
        EPISODE_MAX_BYTES,
        EPISODE_MAX_TOOL_CALLS,
        MAX_ATTEMPTS,
        SSE_FRAME_MAX_BYTES,
    )
    from dashfloat.llm._serve import serve
    from dashfloat.llm.episode import Episode
    from dashfloat.llm.toolcalls import ToolCalls

__all__ = [
    "EPISODE_MAX_BYTES",
    "EPISODE_MAX_TOOL_CALLS",
    "MAX_ATTEMPTS",
    "SSE_FRAME_MAX_BYTES",
    "Episode",
    "FailureKind",
    "ToolCalls",
    "serve",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "EPISODE_MAX_BYTES": "_limits",
        "EPISODE_MAX_TOOL_CALLS": "_limits",
        "MAX_ATTEMPTS": "_limits",
        "SSE_FRAME_MAX_BYTES": "_limits",
        "Episode": "episode",
        "FailureKind": "_errors:Kind",
        "ToolCalls": "toolcalls",
        "serve": "_serve",
    },
)
