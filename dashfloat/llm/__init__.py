"""The LLM stream process: OpenAI-compatible streaming, tool-call assembly, failure taxonomy, bounds."""

# First, before any module of ours imports requests: its import without the modules we never use.
from dashfloat.llm import _imports  # noqa: F401

# isort: split
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
