"""Hooks in the executor process over a real pipe (ADR 0088): Esc and shutdown mid-hook, event hooks, order."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dashfloat.agent import ForkWorkers
from dashfloat.hooks import event_payload
from dashfloat.protocol import (
    CancelTool,
    ExecutorToAgent,
    HookCommand,
    HooksRan,
    ReadFileArgs,
    RunHooks,
    RunTool,
    Shutdown,
    ToolCancelled,
    ToolFailed,
    ToolFinished,
    ToolHooks,
    WriteFileArgs,
)
from tests.e2e import wait_for
from tests.executor.test_serve import Agent, reply

PY = sys.executable


@pytest.fixture
def agent(root: Path) -> Iterator[Agent]:
    worker = ForkWorkers(str(root), 5.0, log_path="", held_fds=[]).start_executor()
    yield worker.channel, worker.process
    worker.channel.close()
    worker.process.join(10)
    if worker.process.is_alive():
        worker.process.kill()
        worker.process.join()


def hooks(pre: list[str] = [], post: list[str] = []) -> ToolHooks:  # noqa: B006 - read only
    return ToolHooks(
        pre=[HookCommand(command, 20.0) for command in pre],
        post=[HookCommand(command, 20.0) for command in post],
        tool_name="write_file",
    )


def sleeping_hook(marker: str) -> str:
    return f"{PY} -c 'import time; time.sleep(300)' {marker}"


def marked(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if marker in process.cmdline() and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


def test_esc_during_a_pre_tool_use_hook_kills_it_and_the_call_never_runs(agent: Agent, root: Path) -> None:
    channel, _ = agent
    marker = f"hook-{uuid.uuid4()}"
    args = WriteFileArgs(path="new.txt", content="x\n")
    channel.send(RunTool("w1", args, hooks=hooks(pre=[sleeping_hook(marker)])))
    assert wait_for(lambda: bool(marked(marker)))
    channel.send(CancelTool("w1"))
    done = reply(channel)
    assert isinstance(done, ToolFinished) and done.result == ToolCancelled()
    assert wait_for(lambda: not marked(marker))
    assert not (root / "new.txt").exists()


def test_a_post_hook_runs_only_after_a_call_that_ran(agent: Agent, root: Path) -> None:
    channel, _ = agent
    channel.send(RunTool("r1", ReadFileArgs(path="missing.txt"), hooks=hooks(post=["echo seen; exit 2"])))
    done = reply(channel)
    assert isinstance(done, ToolFinished) and isinstance(done.result, ToolFailed) and done.hook_context == ""
    channel.send(RunTool("w2", WriteFileArgs(path="b.txt", content="b\n"), hooks=hooks(post=["echo seen >&2; exit 2"])))
    done = reply(channel)
    assert isinstance(done, ToolFinished) and done.hook_context == "seen" and (root / "b.txt").read_text() == "b\n"


def test_event_hooks_answer_by_ref_and_a_call_waits_for_them(agent: Agent, root: Path) -> None:
    channel, _ = agent
    (root / "a.txt").write_text("hello\n")
    payload = event_payload("SessionStart", "s", str(root), source="startup").decode()
    slow = HookCommand(f"{PY} -c 'import sys, time; sys.stdin.read(); time.sleep(0.3); print(\"ctx\")'", 20.0)
    channel.send(RunHooks(ref=1, event="SessionStart", hooks=[slow], payload=payload))
    channel.send(RunTool("r1", ReadFileArgs(path="a.txt")))
    channel.send(RunHooks(ref=2, event="Stop", hooks=[HookCommand("echo bye >&2; exit 1", 20.0)], payload="{}"))
    first, second, third = reply(channel), reply(channel), reply(channel)
    # The event hooks that came meanwhile run before the waiting call (the agent never sends both at once).
    assert first == HooksRan(ref=1, context="ctx")
    assert second == HooksRan(ref=2, notices=["Stop hook `echo bye >&2; exit 1` exited 1: bye"])
    assert isinstance(third, ToolFinished) and third.call_id == "r1"


def test_shutdown_during_a_hook_leaves_no_hook_running(agent: Agent) -> None:
    channel, process = agent
    marker = f"hook-{uuid.uuid4()}"
    channel.send(RunHooks(ref=1, event="Stop", hooks=[HookCommand(sleeping_hook(marker), 20.0)], payload="{}"))
    assert wait_for(lambda: bool(marked(marker)))
    channel.send(Shutdown())
    process.join(10)
    assert not process.is_alive()
    assert wait_for(lambda: not marked(marker))


def test_a_reply_type_is_in_the_union() -> None:
    assert HooksRan in ExecutorToAgent.__args__
