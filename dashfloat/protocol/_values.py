"""The protocol's values: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from dashfloat.protocol._base import (
    NetworkMode,
    ReasoningEcho,
    ReasoningEffort,
    ReasoningField,
    SandboxMode,
    ToolCallMode,
)

# ---------------------------------------------------------------- shared values (not messages)


class ProviderConfig(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where and how to reach one OpenAI-compatible endpoint (the key itself never travels)."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    context_window: int | None = None
    context_window_from: str = ""
    """Where ``context_window`` was set, in words (/usage says it in its brackets): a config file's field, the demo
    model's own; empty: "configured"."""
    headers: dict[str, str] = {}
    max_tokens: int | None = None
    """The answer bound sent as ``max_tokens``; None: derived from the window; 0: never sent."""
    tool_calls: ToolCallMode = "auto"
    reasoning_echo: ReasoningEcho = "auto"
    """Kept reasoning sent back: ``auto`` on tool-call messages of the current turn, ``always`` on every assistant
    message that kept some, ``never`` (ADR 0077)."""
    reasoning_effort: ReasoningEffort | None = None
    """Sent as ``reasoning_effort`` when set (``none``: thinking off, as Ollama requires)."""
    # Sampling per provider (issue 39, ADR 0092): None / empty: the server's own default.
    temperature: float | None = None
    """Sent as ``temperature`` when set."""
    top_p: float | None = None
    """Sent as ``top_p`` when set."""
    extra_body: dict[str, Any] = {}
    """Server-specific request fields merged into every request (``top_k``, ``repeat_penalty``, ...); never one the
    request itself writes (config.py refuses those)."""


class SandboxPolicy(msgspec.Struct, frozen=True, omit_defaults=True):
    """How one execute_command call is confined (``RunTool.sandbox``); the session's mode is the ceiling.

    A call can ask for less than the session allows (``read-only`` in a ``workspace-write`` session, e.g. an
    allowlisted command run unasked), never more; in an ``off`` session nothing is confined.
    """

    mode: Literal["workspace-write", "read-only"] = "workspace-write"
    network: bool = False
    """True only for a call a person approved with a keypress, or when ``--network``/config enables it."""
    private_home: bool = False
    """Give the call an empty home (``SandboxState.home``): a command run unasked follows symlinks in the
    tree that its checked arguments cannot show, so what it reads stays out of the user's files."""
    writable: list[str] = []
    """Paths this one call may write besides the session's (issue 35: a person's keypress after the sandbox refused
    a write there); the executor still refuses one that can never be writable (``dashfloat.sandbox_access``)."""


class CommandLimits(msgspec.Struct, frozen=True, omit_defaults=True):
    """Config ``[limits]``: a command's bounds as the user set them (None: the executor's constant, ADR 0062)."""

    max_processes: int | None = None
    max_memory_mib: int | None = None
    max_process_memory_mib: int | None = None
    max_file_mib: int | None = None


class SandboxState(msgspec.Struct, frozen=True, omit_defaults=True):
    """The session's command sandbox as detected at start: what the status bar and confirmations say."""

    mode: SandboxMode = "off"
    network: bool = False
    """``--network``: commands that run without a keypress may use the network too."""
    unavailable: str = ""
    """Why this machine cannot sandbox (then ``mode`` is ``off`` and commands run unconfined)."""
    deny_read: list[str] = []
    """Absolute paths hidden from sandboxed commands (credential stores, config ``[sandbox] deny_read``)."""
    hide_env: list[str] = []
    """Environment variables no command ever gets (the providers' API key variables; ``dashfloat.command_env``)."""
    pass_env: list[str] = []
    """Secret-named variables commands get anyway (config ``[sandbox] pass_env``; never one of ``hide_env``)."""
    home: list[str] = []
    """The user's home directories, emptied for a call with ``SandboxPolicy.private_home``."""
    home_keep: list[str] = []
    """``PATH`` directories inside ``home``, kept readable in an emptied home (a ``~/.cargo/bin/rg``)."""
    limits: CommandLimits = msgspec.field(default_factory=CommandLimits)
    """Every command's bounds (config ``[limits]``), sandboxed or not: confinement the executor applies."""
    # The registries and the tool caches (issue 35, ADR 0082).
    network_mode: NetworkMode = "off"
    """``--network``: what commands that run without a keypress reach (``network`` is True when it is ``on``)."""
    allow_domains: list[str] = []
    """The hosts the proxy lets ``registries`` commands reach (the defaults and ``[sandbox] allow_domains``)."""
    deny_domains: list[str] = []
    """Hosts the proxy refuses whatever the allowlist says (``[sandbox] deny_domains``)."""
    writable: list[str] = []
    """Absolute paths every workspace-write command may write besides the workspace (presets and ``writable``)."""
    escalation: bool = False
    """A person is there to grant a refused command one re-run (the TUI; a headless run never asks, it reports)."""


class SandboxGrant(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the sandbox refused one command, and what re-running it with a person's keypress adds (issue 35)."""

    refused: str
    """One line: what was refused (a write under ~/.npm, a host the proxy refused, the network)."""
    writable: list[str] = []
    """Directories the re-run may write (each the refused path's first directory under the home)."""
    network: bool = False
    """The re-run gets the whole network (a host off the allowlist, a program that ignores the proxy)."""


# hooks (ADR 0088): what the agent sends the executor to run around one tool call


class HookCommand(msgspec.Struct, frozen=True, omit_defaults=True):
    """One configured hook to run (``dashfloat.hooks``): its command line, its timeout, where it was configured."""

    command: str
    timeout_s: float
    source: str = ""
    """The file that configured it (named in what the user is told of its failures)."""


class ToolHooks(msgspec.Struct, frozen=True, omit_defaults=True):
    """The hooks whose matcher names one call's tool: run before it (``pre``) and after it (``post``)."""

    pre: list[HookCommand] = []
    post: list[HookCommand] = []
    session_id: str = ""
    tool_name: str = ""
    """The tool's name as the model called it (what a matcher matched)."""


class FunctionCall(msgspec.Struct, frozen=True):
    """The function part of an assistant tool call: arguments as a JSON string (canonical form)."""

    name: str
    arguments: str


class ToolCallRecord(msgspec.Struct, frozen=True):
    """One tool call in an assistant message, exactly as sent back to the provider."""

    id: str
    function: FunctionCall
    type: str = "function"


class ChatMessage(msgspec.Struct, frozen=True, omit_defaults=True):
    """One conversation message in the provider's chat/completions shape."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCallRecord] | None = None
    tool_call_id: str | None = None
    reasoning: str | None = None
    """The assistant's reasoning, kept (bounded) and echoed as the server requires (ADR 0077); never answer text."""
    reasoning_field: ReasoningField | None = None
    """The field ``reasoning`` arrived in, and goes back in."""
    reasoning_details: str | None = None
    """OpenRouter's ``reasoning_details`` as JSON text, echoed with the reasoning."""
