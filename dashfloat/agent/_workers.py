"""Inside the agent process: forking its two workers (LLM stream, executor) and stopping them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Final

from dashfloat._startup.fork import FORK, start_sharing
from dashfloat._startup.preload import Preload
from dashfloat.channel import Channel, PeerDied
from dashfloat.procutil import become_child, die_with_parent, kill_strays, set_name, stop_process
from dashfloat.protocol import AgentToExecutor, ExecutorToAgent, LlmToAgent, SandboxState, Shutdown, msgpack_decoder

STOP_GRACE_S: Final = 0.3
AGENT_PROCESS_NAME: Final = "dashfloat-agent"
LLM_PROCESS_NAME: Final = "dashfloat-llm"
EXECUTOR_PROCESS_NAME: Final = "dashfloat-exec"
EXECUTOR_CODE: Final = ("dashfloat.executor:serve",)
"""What the agent imports before it forks the executor (the pages are then shared: ADR 0038)."""


class ForkedWorker:
    """One child process and our end of its channel."""

    def __init__(self, process: BaseProcess, channel: Channel[Any]) -> None:
        self.process = process
        self._channel = channel
        self._asked = False

    @property
    def channel(self) -> Channel[Any]:
        return self._channel

    @property
    def sentinel(self) -> int:
        return self.process.sentinel

    def exit_reason(self) -> str:
        # it closed its pipe, so it is going; one that lingers is no use to us any more
        return stop_process(self.process, STOP_GRACE_S, ask=None)

    def ask_stop(self) -> None:
        """Send Shutdown and return: a ``stop`` after it only waits (several workers then stop at once)."""
        self._ask_shutdown(self.process)
        self._asked = True

    def stop(self) -> None:
        """Ask it to stop (unless ``ask_stop`` did), then make sure: a short grace, SIGKILL, reap."""
        stop_process(self.process, STOP_GRACE_S, ask=None if self._asked else self._ask_shutdown)
        self._channel.close()

    def _ask_shutdown(self, process: BaseProcess) -> None:
        with contextlib.suppress(PeerDied):
            self._channel.send(Shutdown())


def _llm_main(conn: Connection) -> None:
    # Imported in the child; serve imports requests on a thread of its own (and trims the heap after it).
    from dashfloat.llm import serve

    serve(conn)


def _executor_main(conn: Connection, *args: Any) -> None:
    from dashfloat.executor import serve

    serve(conn, *args)


def _worker_entry(
    target: Callable[..., None], conn: Connection, name: str, log_path: str, close_fds: list[int], *args: Any
) -> None:
    become_child(log_path, close_fds)
    # From the start, not only once its imports are done: an agent killed meanwhile (a start abandoned under load)
    # takes the worker along at once. The worker's own loop may pick another signal later (the executor does).
    die_with_parent()
    set_name(name)
    target(conn, *args)


class ForkWorkers:
    """The runtime's ``Workers``: forks fresh LLM and executor processes for the agent."""

    def __init__(
        self,
        root: str,
        exec_timeout_s: float,
        log_path: str,
        held_fds: list[int],
        sandbox: SandboxState | None = None,
        own_strays: bool = False,
    ) -> None:
        """``own_strays``: we are the agent process, a subreaper (``agent_process_main``): what a dead executor
        leaves comes up to us, and a fresh executor's start and our exit kill it (``kill_strays``)."""
        self.own_strays = own_strays
        self._executors_started = 0
        self.root = root
        self.exec_timeout_s = exec_timeout_s
        self.sandbox = sandbox if sandbox is not None else SandboxState()
        self.log_path = log_path
        self.held_fds = list(held_fds)
        self._live: list[ForkedWorker] = []
        self._preforked_llm: ForkedWorker | None = None
        self._preload: Preload | None = None

    def configure(self, root: str, exec_timeout_s: float, sandbox: SandboxState) -> None:
        """The executor's settings, when they come after the LLM worker was forked (the agent's options)."""
        self.root = root
        self.exec_timeout_s = exec_timeout_s
        self.sandbox = sandbox

    def prefork_llm(self) -> None:
        """Fork the LLM worker now, before the agent imports its own code: its imports run in parallel with ours."""
        self._preforked_llm = self.start_llm()

    def preload_executor(self) -> int | None:
        """Import the executor's code on a thread (the agent goes on answering its pipes meanwhile); the descriptor
        returned becomes readable when ``start_executor`` can fork without waiting for it."""
        if self._preload is None:
            self._preload = Preload(EXECUTOR_CODE, notify=True)
        return self._preload.fileno()

    def _finish_preload(self) -> None:
        """Wait for a preload still importing: a fork meanwhile would hand the child the import's locks."""
        if self._preload is not None:
            preload, self._preload = self._preload, None
            preload.wait()
            preload.close()

    def abandon(self) -> None:
        """Kill every worker at once: they were forked for a start that did not happen and hold nothing yet."""
        for worker in self._live:
            stop_process(worker.process, 0.0, ask=None)
            worker.channel.close()
        self._live = []
        self._preforked_llm = None

    def _start(self, target: Callable[..., None], union: Any, name: str, process_name: str, *args: Any) -> ForkedWorker:
        """Fork ``target(conn, *args)``; ``name`` names the channel, ``process_name`` the process."""
        self._finish_preload()
        self._live = [w for w in self._live if w.process.is_alive()]
        ours, theirs = FORK.Pipe()
        close = [*self.held_fds, ours.fileno()]
        for worker in self._live:
            close.append(worker.channel.fileno())
        process = FORK.Process(
            target=_worker_entry,
            args=(target, theirs, process_name, self.log_path, close, *args),
            name=process_name,
            daemon=True,
        )
        start_sharing(process)
        theirs.close()
        worker = ForkedWorker(process, Channel(ours, union, name))
        self._live.append(worker)
        return worker

    def start_llm(self) -> ForkedWorker:
        if self._preforked_llm is not None:
            worker, self._preforked_llm = self._preforked_llm, None
            return worker
        return self._start(_llm_main, LlmToAgent, "llm->agent", LLM_PROCESS_NAME)

    def start_executor(self) -> ForkedWorker:
        # Its code is imported here first, in the agent (by the preload, if one ran): the pages are then shared,
        # and a child importing after the fork copies more than its modules (the interned names, sys.modules):
        # measured ~2 MB less across the two (ADR 0038).
        self._finish_preload()
        from dashfloat.executor import serve  # noqa: F401

        # Both directions' decoders too, before the fork: building one writes msgspec's type information into each
        # message class, pages the two processes share, so built after it (ours here, the executor's at its start)
        # both held copies of them: measured 0.7 MB less across the two (issue 19, ADR 0046).
        msgpack_decoder(ExecutorToAgent)
        msgpack_decoder(AgentToExecutor)
        if self._executors_started:
            # The last one is dead and reaped (``exit_reason``): its orphans are ours now (ADR 0057 §2).
            self.kill_strays()
        self._executors_started += 1
        return self._start(
            _executor_main,
            ExecutorToAgent,
            "executor->agent",
            EXECUTOR_PROCESS_NAME,
            self.root,
            self.exec_timeout_s,
            self.sandbox,
        )

    def kill_strays(self) -> None:
        """Kill and reap every process below us but our live workers: a dead executor's orphans, its commands'
        ``setsid`` children that its own kill never reached (it was SIGKILLed itself). Only in the agent process
        (``own_strays``): elsewhere (a test's process) what is below us is not ours to kill."""
        if self.own_strays:
            kill_strays([w.process.pid for w in self._live if w.process.is_alive() and w.process.pid is not None])
