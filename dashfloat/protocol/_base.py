"""The protocol's base: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

import re
from typing import Literal

import msgspec

Phase = Literal["idle", "streaming", "compacting", "confirming", "running"]
Decision = Literal["approve", "reject", "reject_stop", "approve_always"]
ApprovalMode = Literal["ask", "edits", "all", "plan"]
ResultStatus = Literal["ok", "error", "rejected", "cancelled"]
Level = Literal["info", "warning", "error"]
ToolCallMode = Literal["native", "text", "auto"]
ReasoningField = Literal["reasoning_content", "reasoning", "think"]
"""Where a server put its reasoning: a delta field, or ``<think>`` at the start of the answer text (never echoed)."""
ReasoningEcho = Literal["auto", "always", "never"]
ReasoningEffort = Literal["low", "medium", "high", "none"]
"""How a provider's tool calls are read: native ``tool_calls`` only, text forms too, or text forms only while
the provider has sent no native call (docs/providers.md)."""
StreamFailureKind = Literal[
    "connection_refused",
    "dns",
    "tls",
    "connect_timeout",
    "idle_timeout",
    "bad_request",
    "auth",
    "not_found",
    "rate_limited",
    "server_error",
    "not_sse",
    "malformed_frame",
    "provider_error",
    "truncated",
    "frame_too_large",
    "episode_too_large",
    "too_many_calls",
    "redirected",
    "repeating",
    "cancelled",
    "internal",
    "crashed",
    "context_exceeded",
    "first_byte_timeout",
]
"""Every way a stream can fail (docs/providers.md "Failure kinds"); ``crashed``: the LLM process died."""
SandboxMode = Literal["workspace-write", "read-only", "off"]
NetworkMode = Literal["registries", "on", "off"]
"""The network of sandboxed commands that run without a keypress (issue 35, ADR 0082): the package registries through
the allowlisting proxy, all of it, or none."""
WindowSource = Literal["config", "server", "table", "assumed"]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Message(msgspec.Struct, frozen=True, tag_field="type", tag=_snake, omit_defaults=True):
    """Base of every wire message."""
