"""Helpers for end-to-end tests: a real agent process tree against the real scripted SSE server."""

from __future__ import annotations

import os
import select
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from dashfloat.agent import AgentOptions
from dashfloat.protocol import (
    AgentToUi,
    ApprovalMode,
    ClearSession,
    PhaseChanged,
    ProviderConfig,
    SessionCleared,
    SystemEntry,
    TurnEnded,
)
from dashfloat.runtime import AgentProcess
from dashfloat.testing.sse_server import ScriptedServer


@contextmanager
def agent_tree(
    server: ScriptedServer,
    cwd: Path,
    approval: ApprovalMode = "ask",
    state_dir: Path | None = None,
    exec_timeout_s: float = 10.0,
    idle_timeout_s: float = 10.0,
    **extra: Any,
) -> Iterator[AgentProcess]:
    """A real agent process (forking its LLM and executor workers), shut down afterwards."""
    provider = ProviderConfig(name="scripted", base_url=server.base_url, model="m", context_window=100_000)
    options = AgentOptions(
        provider=provider,
        cwd=str(cwd),
        approval=approval,
        exec_timeout_s=exec_timeout_s,
        idle_timeout_s=idle_timeout_s,
        state_dir=str(state_dir or ""),
        **extra,
    )
    link = AgentProcess(options, log_path=str(cwd.parent / "dashfloat.log"))
    try:
        yield link
    finally:
        link.shutdown()


PROVIDER_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "DASHFLOAT_PROVIDER", "DASHFLOAT_MODEL")


def isolated_environment(tmp_path: Path) -> dict[str, str]:
    """The environment for a `dashfloat` subprocess: private XDG dirs, no provider from the developer's shell."""
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    return {**env, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}


def tui_environment(tmp_path: Path) -> dict[str, str]:
    """The environment for the real TUI in a pty: private home and XDG dirs, none of the developer's provider,
    DashFloat or NO_COLOR settings, and this checkout importable."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DASHFLOAT_", "NO_COLOR"))}
    return {
        **kept,
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
    }


def dashfloat_argv(server: ScriptedServer, cwd: Path | str, *extra: str) -> list[str]:
    """The real CLI's command line against the scripted server."""
    return [sys.executable, "-m", "dashfloat", "--cwd", str(cwd), "--base-url", server.base_url, "--model", "m", *extra]


_unread: weakref.WeakKeyDictionary[AgentProcess, list[AgentToUi]] = weakref.WeakKeyDictionary()
"""Messages a collect received after the one it waited for (they came in the same batch): the next collect on
that link starts with them (dropping them lost a turn's end that came with its tool result, and the next wait for
it timed out)."""


def collect(
    link: AgentProcess,
    until: Callable[[AgentToUi], bool],
    timeout_s: float = 10.0,
    into: list[Any] | None = None,
) -> list[AgentToUi]:
    """Receive messages until ``until(message)`` holds (that message included); fail on timeout. What came after
    that message is kept for the next collect on ``link``."""
    got: list[AgentToUi] = [] if into is None else into
    unread = _unread.setdefault(link, [])
    deadline = time.monotonic() + timeout_s
    while True:
        while unread:
            message = unread.pop(0)
            got.append(message)
            if until(message):
                return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out; got {got!r}")
        select.select([link.fileno()], [], [], 0.05)
        unread.extend(link.receive())


def fresh_conversation(link: AgentProcess) -> None:
    """/clear, and wait for all it answers: the next turn's request carries only its own messages (a timed turn
    after many others would otherwise send, and be slowed by, the whole conversation so far)."""
    link.send(ClearSession())
    cleared = False

    def announced(message: AgentToUi) -> bool:
        nonlocal cleared
        cleared = cleared or isinstance(message, SessionCleared)
        return cleared and isinstance(message, SystemEntry)

    collect(link, announced)


def turn_over(message: AgentToUi) -> bool:
    return isinstance(message, PhaseChanged) and message.phase == "idle"


def outcome(messages: list[AgentToUi]) -> str:
    return next(m.outcome for m in reversed(messages) if isinstance(m, TurnEnded))


def children_named(pid: int, name: str) -> list[psutil.Process]:
    return [p for p in psutil.Process(pid).children() if _name(p) == name]


def _name(process: psutil.Process) -> str:
    try:
        return str(process.name())
    except psutil.Error:
        return ""


def wait_for(predicate: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def assert_no_dangling(messages: list[dict[str, Any]]) -> None:
    """A request body's conversation: each assistant tool call answered right after, in call order."""
    for i, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        if message.get("role") == "assistant" and calls:
            ids = [c["id"] for c in calls]
            following = [m.get("tool_call_id") for m in messages[i + 1 : i + 1 + len(ids)]]
            assert following == ids, (ids, following)
