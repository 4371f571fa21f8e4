"""The executor process over a real Pipe: previews, runs, cancel, shutdown, a dead peer, bad frames."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from multiprocessing.process import BaseProcess
from pathlib import Path

import msgspec
import psutil
import pytest

from dashfloat.agent import ForkWorkers
from dashfloat.channel import Channel
from dashfloat.executor._limits import LIVE_CHUNK_MAX_BYTES
from dashfloat.procutil import STOP_GUARD_PROCESS_NAME
from dashfloat.protocol import (
    CancelTool,
    CommandExited,
    CommandOutput,
    CommandStarted,
    ExecuteCommandArgs,
    ExecutorToAgent,
    FrameRejected,
    ListDirectoryArgs,
    PreviewReady,
    PreviewTool,
    ReadFileArgs,
    ReadFileResult,
    RunTool,
    Shutdown,
    ToolCancelled,
    ToolFailed,
    ToolFinished,
    WriteFileArgs,
    WriteFileResult,
)
from tests.e2e import wait_for
from tests.executor.conftest import gone, group_gone

REPLY_TIMEOUT_S = 10.0

Agent = tuple[Channel[ExecutorToAgent], BaseProcess]


@pytest.fixture
def agent(root: Path) -> Iterator[Agent]:
    """A real executor process serving over a real pipe, forked as the agent forks it."""
    worker = ForkWorkers(str(root), 5.0, log_path="", held_fds=[]).start_executor()
    proc = worker.process
    yield worker.channel, proc
    worker.channel.close()
    proc.join(REPLY_TIMEOUT_S)
    if proc.is_alive():
        proc.kill()
        proc.join()


def reply(channel: Channel[ExecutorToAgent], live: list[CommandOutput] | None = None) -> ExecutorToAgent:
    """The next reply that is not live output (which goes to ``live`` when given)."""
    while True:
        assert channel.poll(REPLY_TIMEOUT_S), "no reply from the executor"
        message = channel.recv()
        if not isinstance(message, CommandOutput):
            return message
        if live is not None:
            live.append(message)


def start_sleeper(channel: Channel[ExecutorToAgent], call_id: str) -> int:
    channel.send(RunTool(call_id, ExecuteCommandArgs(command="sleep 300")))
    started = reply(channel)
    assert isinstance(started, CommandStarted) and started.call_id == call_id
    return started.pgid


def test_preview_then_run_with_digest(agent: Agent, root: Path) -> None:
    channel, _ = agent
    (root / "f.txt").write_text("a\n")
    args = WriteFileArgs(path="f.txt", content="b\n")
    channel.send(PreviewTool("c1", args))
    ready = reply(channel)
    assert isinstance(ready, PreviewReady) and ready.lines == ["@@ -1 +1 @@", "-a", "+b"]
    channel.send(RunTool("c1", args, expect_digest=ready.digest))
    assert reply(channel) == ToolFinished("c1", WriteFileResult(path="f.txt", bytes=2, created=False))
    channel.send(RunTool("c2", WriteFileArgs(path="f.txt", content="c\n"), expect_digest=ready.digest))
    finished = reply(channel)
    assert isinstance(finished, ToolFinished) and isinstance(finished.result, ToolFailed)
    assert finished.result.error.startswith("file changed since the preview")


def test_command_started_then_finished(agent: Agent) -> None:
    channel, _ = agent
    channel.send(RunTool("c1", ExecuteCommandArgs(command="echo $$")))
    started = reply(channel)
    assert isinstance(started, CommandStarted)
    finished = reply(channel)
    assert isinstance(finished, ToolFinished) and isinstance(finished.result, CommandExited)
    assert finished.result.exit_code == 0
    assert int(finished.result.output.output) == started.pgid  # the shell leads its own group


def test_a_running_command_sends_its_output_live_bounded_and_rate_limited(agent: Agent, root: Path) -> None:
    channel, _ = agent
    # a burst far larger than one chunk, then a last line, then silence until the test says stop: the
    # silence must not hold the last line back (the loop wakes for a held chunk)
    command = "head -c 100000 /dev/zero | tr '\\0' a; echo; echo last line; while [ ! -e stop ]; do sleep 0.05; done"
    channel.send(RunTool("c1", ExecuteCommandArgs(command=command)))
    assert isinstance(reply(channel), CommandStarted)
    live: list[CommandOutput] = []
    while not live or not live[-1].text.endswith("last line\n"):
        assert channel.poll(REPLY_TIMEOUT_S), f"no live output; got {live!r}"
        message = channel.recv()
        assert isinstance(message, CommandOutput), message  # the command is still running
        live.append(message)
    (root / "stop").touch()
    finished = reply(channel, live)
    assert isinstance(finished, ToolFinished) and isinstance(finished.result, CommandExited)
    assert finished.result.exit_code == 0
    assert all(chunk.call_id == "c1" for chunk in live)
    assert all(len(chunk.text.encode()) <= LIVE_CHUNK_MAX_BYTES for chunk in live)
    shown = sum(len(chunk.text.encode()) for chunk in live)
    assert shown + sum(chunk.skipped_bytes for chunk in live) == 100_000 + len("\nlast line\n")


def test_bad_calls_are_results(agent: Agent) -> None:
    channel, _ = agent
    channel.send(RunTool("c1", ExecuteCommandArgs(command="true", cwd="..")))
    finished = reply(channel)
    assert isinstance(finished, ToolFinished) and isinstance(finished.result, ToolFailed)
    assert finished.result.error.startswith("path escapes")
    # Arguments arrive parsed: a frame whose arguments break the Structs' constraints is refused, not run.
    frame = {"type": "run_tool", "call_id": "c2", "args": {"tool": "read_file", "path": "f", "offset": 0}}
    channel.conn.send_bytes(msgspec.msgpack.encode(frame))
    rejected = reply(channel)
    assert isinstance(rejected, FrameRejected) and "offset" in rejected.error


def test_cancel_kills_the_group_and_answers(agent: Agent) -> None:
    channel, _ = agent
    pgid = start_sleeper(channel, "c1")
    sent = time.monotonic()
    channel.send(CancelTool("c1"))
    finished = reply(channel)
    latency_s = time.monotonic() - sent
    assert isinstance(finished, ToolFinished) and finished.call_id == "c1"
    assert isinstance(finished.result, ToolCancelled)
    assert latency_s < REPLY_TIMEOUT_S  # the 100 ms figure is measured by bench/executor.py
    assert group_gone(pgid)  # killed before the answer; exited when next scheduled (EXIT_WAIT_S)


def test_messages_during_a_command_are_served(agent: Agent, root: Path) -> None:
    channel, _ = agent
    (root / "f.txt").write_text("x\n")
    start_sleeper(channel, "c1")
    channel.send(CancelTool("unknown"))  # ignored
    channel.send(PreviewTool("p1", WriteFileArgs(path="f.txt", content="y\n")))
    assert isinstance(preview := reply(channel), PreviewReady) and preview.call_id == "p1"
    channel.send(RunTool("c2", ReadFileArgs(path="f.txt")))  # queued behind the command
    channel.send(CancelTool("c1"))
    first, second = reply(channel), reply(channel)
    assert isinstance(first, ToolFinished) and first.call_id == "c1" and isinstance(first.result, ToolCancelled)
    assert isinstance(second, ToolFinished) and second.call_id == "c2"
    assert isinstance(second.result, ReadFileResult) and second.result.content == "x\n"


def test_cancel_when_idle_is_ignored(agent: Agent) -> None:
    channel, _ = agent
    channel.send(CancelTool("c9"))
    channel.send(PreviewTool("p1", ExecuteCommandArgs(command="ls")))
    assert isinstance(reply(channel), PreviewReady)


def test_shutdown_mid_command_answers_and_exits(agent: Agent) -> None:
    channel, proc = agent
    pgid = start_sleeper(channel, "c1")
    channel.send(Shutdown())
    finished = reply(channel)
    assert isinstance(finished, ToolFinished) and isinstance(finished.result, ToolCancelled)
    proc.join(REPLY_TIMEOUT_S)
    assert proc.exitcode == 0
    assert gone(pgid)


def test_peer_death_kills_the_command(agent: Agent) -> None:
    channel, proc = agent
    pgid = start_sleeper(channel, "c1")
    channel.close()
    proc.join(REPLY_TIMEOUT_S)
    assert proc.exitcode == 0
    assert gone(pgid)


def test_sigterm_kills_the_command(agent: Agent) -> None:
    channel, proc = agent
    pgid = start_sleeper(channel, "c1")
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGTERM)
    proc.join(REPLY_TIMEOUT_S)
    assert proc.exitcode == 128 + signal.SIGTERM
    assert gone(pgid)


def test_undecodable_frame_is_answered_and_serving_goes_on(agent: Agent) -> None:
    channel, _ = agent
    channel.conn.send_bytes(b"\xc1 not msgpack")
    rejected = reply(channel)
    assert isinstance(rejected, FrameRejected)
    assert rejected.error.startswith("undecodable message on the agent->executor channel")
    channel.send(PreviewTool("p1", ListDirectoryArgs()))
    assert isinstance(reply(channel), PreviewReady)


STOPPED_STATES = {psutil.STATUS_STOPPED, psutil.STATUS_DISK_SLEEP}


def _states(pgid: int) -> set[str]:
    """The states of the processes in group ``pgid`` (psutil's: "stopped", "sleeping", …)."""
    found: set[str] = set()
    for proc in psutil.process_iter():
        # Any process of the machine may exit between the listing and the look-up (os's error, not psutil's).
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(proc.pid) == pgid:
                found.add(proc.status())
    return found


def test_ctrl_z_stops_the_running_command_with_the_executor_and_fg_continues_it(agent: Agent) -> None:
    """Found in tmux: Ctrl-Z suspended the TUI, but the command it was running (its own process group, for the
    group kill) went on. The SIGTSTP the TUI's job gets stops the command's group first; SIGCONT continues it."""
    channel, proc = agent
    pgid = start_sleeper(channel, "c1")
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGTSTP)
    # A shell waiting in vfork for a child stopped before its exec shows disk-sleep: stopped too, in effect.
    assert wait_for(lambda: psutil.STATUS_STOPPED in _states(pgid) <= STOPPED_STATES), _states(pgid)
    os.kill(proc.pid, signal.SIGCONT)  # `fg`
    assert wait_for(lambda: psutil.STATUS_STOPPED not in _states(pgid)), _states(pgid)
    channel.send(CancelTool("c1"))  # and it is served again
    finished = reply(channel)
    assert isinstance(finished, ToolFinished) and isinstance(finished.result, ToolCancelled)


def test_an_fg_that_comes_while_the_executor_stops_its_commands_is_not_lost(agent: Agent) -> None:
    """ADR 0095: the Ctrl-Z handler stopped the commands, then the executor itself (SIGSTOP); an ``fg`` whose SIGCONT
    came in between found the executor running and was lost: the executor stopped for good, its command with it (the
    TUI's Ctrl-Z test failed about one run in two). Here the SIGCONT comes right behind the SIGTSTP, before the
    handler is done, each time."""
    channel, proc = agent
    pgid = start_sleeper(channel, "c1")
    assert proc.pid is not None
    for _ in range(5):
        os.kill(proc.pid, signal.SIGTSTP)
        os.kill(proc.pid, signal.SIGCONT)  # `fg` at once
        assert wait_for(lambda: psutil.STATUS_STOPPED not in _states(pgid)), _states(pgid)
        assert psutil.Process(proc.pid).status() != psutil.STATUS_STOPPED
    channel.send(CancelTool("c1"))  # and it is served again
    finished = reply(channel)
    assert isinstance(finished, ToolFinished) and isinstance(finished.result, ToolCancelled)


def start_writing_a_pid(
    channel: Channel[ExecutorToAgent], root: Path, command: str, pid_file: str
) -> tuple[CommandStarted, int]:
    """Run ``command``, which writes a process's pid to ``pid_file`` in the tree; its CommandStarted and that pid."""
    channel.send(RunTool("c1", ExecuteCommandArgs(command=command)))
    started = reply(channel)
    assert isinstance(started, CommandStarted)
    written = root / pid_file
    assert wait_for(lambda: written.exists() and written.read_text().endswith("\n"))
    return started, int(written.read_text())


def test_ctrl_z_stops_what_left_the_commands_group_too_and_fg_continues_it(agent: Agent, root: Path) -> None:
    """ADR 0058: a process that made a session of its own (``setsid``, a daemonizing tool) is out of the command's
    group, so the group's SIGSTOP missed it and it went on while DashFloat was suspended. The executor is its
    subreaper (ADR 0050): every process below it stops, and fg continues exactly those."""
    channel, proc = agent
    executor = proc.pid
    assert executor is not None
    command = "setsid sleep 300 & echo $! > daemon.pid; setsid sh -c 'sleep 300 & wait' & sleep 300"
    started, daemon_pid = start_writing_a_pid(channel, root, command, "daemon.pid")
    daemon = psutil.Process(daemon_pid)
    # with the second daemon's shell and its child: a session of their own, two processes deep
    assert wait_for(lambda: len(_outside(executor, started.pgid)) >= 3), _outside(executor, started.pgid)
    outside = _outside(executor, started.pgid)
    assert daemon in outside
    os.kill(executor, signal.SIGTSTP)
    assert wait_for(lambda: all(p.status() in STOPPED_STATES for p in outside)), [p.status() for p in outside]
    os.kill(executor, signal.SIGCONT)  # `fg`
    assert wait_for(lambda: all(p.status() not in STOPPED_STATES for p in outside)), [p.status() for p in outside]
    assert wait_for(lambda: psutil.STATUS_STOPPED not in _states(started.pgid))
    channel.send(CancelTool("c1"))
    finished = reply(channel)
    assert isinstance(finished, ToolFinished) and isinstance(finished.result, ToolCancelled)


def test_fg_leaves_stopped_what_stopped_itself_before_the_ctrl_z(agent: Agent, root: Path) -> None:
    """ADR 0063: fg continued every process below the executor, a command that had stopped itself (SIGSTOP to
    itself, not our Ctrl-Z) too. It is left to whoever stopped it; what Ctrl-Z stopped continues."""
    channel, proc = agent
    executor = proc.pid
    assert executor is not None
    command = "sh -c 'kill -STOP $$; sleep 300' & echo $! > self.pid; sleep 300"
    _, self_stopped_pid = start_writing_a_pid(channel, root, command, "self.pid")
    self_stopped = psutil.Process(self_stopped_pid)
    assert wait_for(lambda: self_stopped.status() == psutil.STATUS_STOPPED)
    others = [p for p in psutil.Process(executor).children(recursive=True) if p.pid != self_stopped.pid]
    assert others
    os.kill(executor, signal.SIGTSTP)
    assert wait_for(lambda: all(p.status() in STOPPED_STATES for p in others)), [p.status() for p in others]
    os.kill(executor, signal.SIGCONT)  # `fg`
    assert wait_for(lambda: all(p.status() not in STOPPED_STATES for p in others)), [p.status() for p in others]
    # the guard has been released and reaped: nothing but the command's own processes is below the executor
    assert wait_for(lambda: len(psutil.Process(executor).children(recursive=True)) == len(others) + 1)
    assert self_stopped.status() == psutil.STATUS_STOPPED
    channel.send(CancelTool("c1"))
    finished = reply(channel)
    assert isinstance(finished, ToolFinished) and isinstance(finished.result, ToolCancelled)


def test_what_ctrl_z_stopped_is_killed_when_the_stopped_executor_is_killed(agent: Agent, root: Path) -> None:
    """ADR 0063: ``kill -9 %1`` of a suspended DashFloat left its stopped command (``--sandbox off``; a session of
    its own, re-parented to init) stopped for ever. The guard forked at the Ctrl-Z kills what it stopped."""
    channel, proc = agent
    executor = proc.pid
    assert executor is not None
    command = "setsid sleep 300 & echo $! > daemon.pid; sleep 300"
    started, daemon = start_writing_a_pid(channel, root, command, "daemon.pid")
    os.kill(executor, signal.SIGTSTP)
    assert wait_for(lambda: psutil.Process(daemon).status() in STOPPED_STATES)
    # Killed once Ctrl-Z's handler is done (its guard forked), as `kill -9 %1` after the shell said "Stopped". It
    # waits for fg (ADR 0095) rather than stopping itself, so its own state says nothing: the guard's process does.
    assert wait_for(lambda: _guard_of(executor) is not None)
    os.kill(executor, signal.SIGKILL)
    proc.join(REPLY_TIMEOUT_S)
    assert gone(daemon), psutil.Process(daemon).status()
    assert group_gone(started.pgid)


def _guard_of(executor: int) -> psutil.Process | None:
    """The stop guard the executor forked at a Ctrl-Z (ADR 0063), if it runs."""
    for child in psutil.Process(executor).children():
        with contextlib.suppress(psutil.Error):
            if child.name() == STOP_GUARD_PROCESS_NAME:
                return child
    return None


def _outside(executor: int, pgid: int) -> list[psutil.Process]:
    """The executor's descendants that are not in the command's group."""
    found = []
    for child in psutil.Process(executor).children(recursive=True):
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getpgid(child.pid) != pgid:
                found.append(child)
    return found
