"""An executor's death noticed while sending to it: what it had reported before dying is read first, so that a
command it had released is killed with it (ADR 0050: the agent must know every group it released)."""

from __future__ import annotations

import contextlib
import os
import signal
from multiprocessing import Pipe
from pathlib import Path
from typing import Any

from dashfloat.agent import AgentOptions
from dashfloat.agent._process import AgentShell
from dashfloat.agent._startup import build_core
from dashfloat.agent._workers import ForkedWorker, ForkWorkers
from dashfloat.channel import Channel
from dashfloat.protocol import CancelTool, ExecuteCommandArgs, LlmToAgent, ProviderConfig, RunTool
from tests.executor.conftest import EXIT_WAIT_S, group_gone, within


class _SilentLlm:
    """An LLM worker that is never asked anything here: the far end of a pipe."""

    def __init__(self) -> None:
        ours, self.far = Pipe()
        self.channel: Channel[Any] = Channel(ours, LlmToAgent, "llm")
        self.sentinel, self._never_w = os.pipe()

    def exit_reason(self) -> str:
        return "exit code 0"

    def ask_stop(self) -> None:
        pass

    def stop(self) -> None:
        for fd in (self.sentinel, self._never_w):
            os.close(fd)


class _RealExecutor:
    """Workers with a real forked executor (commands unsandboxed) and a silent LLM."""

    def __init__(self, root: Path) -> None:
        self.forks = ForkWorkers(str(root), 60.0, str(root / "log"), [])
        self.llm = _SilentLlm()
        self.executors: list[ForkedWorker] = []

    def start_llm(self) -> _SilentLlm:
        return self.llm

    def preload_executor(self) -> int | None:
        return None

    def start_executor(self) -> ForkedWorker:
        self.executors.append(self.forks.start_executor())
        return self.executors[-1]


def test_a_command_started_before_an_executor_died_unnoticed_dies_too_when_a_send_finds_it_dead(
    tmp_path: Path,
) -> None:
    # Found by review: the send path (an Esc's CancelTool, an @ lookup while a command runs) closed the channel at
    # once and killed only the groups already read, so a CommandStarted still in the pipe was lost and its command,
    # released and unsandboxed, outlived its executor.
    workers = _RealExecutor(tmp_path)
    provider = ProviderConfig(name="t", base_url="http://127.0.0.1:9/v1", model="m")
    options = AgentOptions(provider=provider, cwd=str(tmp_path))
    ui_far, ui_ours = Pipe()
    shell = AgentShell(ui_ours, build_core(options), workers)
    executor = shell.executor
    assert executor is workers.executors[0]
    process = workers.executors[0].process
    assert process.pid is not None
    pid_file = tmp_path / "pid"
    executor.channel.send(RunTool(call_id="c", args=ExecuteCommandArgs(command=f"echo $$ > {pid_file}; sleep 300")))
    assert within(lambda: pid_file.exists() and pid_file.read_text().strip() != "", EXIT_WAIT_S)
    pgid = int(pid_file.read_text())
    try:
        os.kill(process.pid, signal.SIGKILL)
        process.join(EXIT_WAIT_S)
        shell._send("executor", CancelTool(call_id="c"))  # its CommandStarted is still unread
        assert group_gone(pgid)
        assert shell.executor is not executor  # a fresh one serves what comes next
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        for worker in workers.executors[1:]:
            worker.stop()
        workers.llm.stop()
        ui_far.close()
        ui_ours.close()
