"""The protocol's llm: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

from dashfloat.protocol._base import Level, Message, ReasoningField, StreamFailureKind, WindowSource
from dashfloat.protocol._tool_args import AssembledCall, Usage
from dashfloat.protocol._ui_to_agent import Shutdown
from dashfloat.protocol._values import ChatMessage, ProviderConfig

# ---------------------------------------------------------------- Agent -> LLM stream


class StartStream(Message, frozen=True):
    """Stream one completion for ``messages`` (replies deltas, then StreamDone or StreamFailed)."""

    request_id: int
    provider: ProviderConfig
    messages: list[ChatMessage]
    idle_timeout_s: float
    """Longest gap between two events once the first one arrived (keep-alive comments are no progress)."""
    idle_timeout_from: str = ""
    """Where the idle timeout was set (named in the timeout's message); empty: the default."""
    exec_timeout_s: float | None = None
    """execute_command's default timeout in force, named in the catalogue's text (None: the catalogue's)."""
    first_byte_timeout_s: float = 600.0
    """Longest wait for the first event (a local server reads the whole prompt before answering)."""
    extra_tools: str = ""
    """MCP tools (ADR 0086): a JSON array of tool objects appended to the catalogue ("": none)."""


class DiscoverWindow(Message, frozen=True):
    """Ask the server how large the model's context window is; replies WindowFound."""

    request_id: int
    provider: ProviderConfig


class CancelStream(Message, frozen=True):
    """Stop request ``request_id`` now; replies StreamFailed(kind="cancelled") with partial content."""

    request_id: int


AgentToLlm = StartStream | DiscoverWindow | CancelStream | Shutdown

# ---------------------------------------------------------------- LLM stream -> Agent


class ContentDelta(Message, frozen=True):
    """Answer text streamed for ``request_id``."""

    request_id: int
    text: str


class ReasoningDelta(Message, frozen=True):
    """Reasoning text streamed for ``request_id``."""

    request_id: int
    text: str


class StreamStatus(Message, frozen=True):
    """A notice about the stream (a retry, a dropped option, a server that drops the tools): a system entry."""

    request_id: int
    text: str
    level: Level = "info"


class PromptProgress(Message, frozen=True):
    """Before the first token: how far the server has read the prompt, or (``busy``) that a cancelled one is first."""

    request_id: int
    processed: int = 0
    """Prompt tokens read so far, the cached ones included."""
    total: int = 0
    """Prompt tokens in all (0: not reported)."""
    cached: int = 0
    """Prompt tokens the server had cached from the previous request."""
    busy: bool = False


class StreamDone(Message, frozen=True):
    """The stream finished: the whole content, the assembled calls, why it stopped, usage."""

    request_id: int
    content: str
    tool_calls: list[AssembledCall]
    finish_reason: str
    usage: Usage | None = None
    reasoning: str = ""
    """The reasoning kept with the answer (bounded, marked when cut); its field and OpenRouter's details."""
    reasoning_field: ReasoningField | None = None
    reasoning_details: str = ""


class StreamFailed(Message, frozen=True):
    """The stream failed (``kind`` names the class of failure); what arrived before is kept."""

    request_id: int
    kind: StreamFailureKind
    message: str
    content: str = ""
    tool_calls: list[AssembledCall] = []


class WindowFound(Message, frozen=True):
    """Reply to DiscoverWindow: the window, its source and field, a notice if the server said nonsense."""

    request_id: int
    window: int
    source: WindowSource
    detail: str = ""
    notice: str = ""
    models: list[str] = []
    """The model ids the server's ``GET /models`` listed (empty: it listed none, or was not asked)."""


LlmToAgent = ContentDelta | ReasoningDelta | StreamStatus | PromptProgress | StreamDone | StreamFailed | WindowFound
