"""The agent process: moves messages between the UI, the core and the two workers it supervises."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, Final, ParamSpec, Protocol

from dashfloat.agent._core import AgentCore, Dest
from dashfloat.agent._options import AgentOptions
from dashfloat.agent._startup import build_core
from dashfloat.channel import Channel, PeerDied, ProtocolError, Readiness
from dashfloat.procutil import kill_group
from dashfloat.protocol import (
    CommandStarted,
    ExecutorToAgent,
    JobExited,
    JobStarted,
    LlmToAgent,
    Message,
    ReasoningReceived,
    Shutdown,
    SystemEntry,
    TokenReceived,
    ToolFinished,
    UiToAgent,
)

_P = ParamSpec("_P")

SHUTDOWN_GRACE_S: Final = 0.4
"""How long a turn may take to wind down (cancel answered) once Shutdown arrives."""
LLM_WATCHDOG_SLACK_S: Final = 10.0
"""Beyond the stream's own idle timeout: an LLM process silent for longer is stuck, and is replaced."""


class Worker(Protocol):
    """A supervised child process reachable over one channel."""

    @property
    def channel(self) -> Channel[Any]: ...

    @property
    def sentinel(self) -> int: ...

    def exit_reason(self) -> str: ...

    def ask_stop(self) -> None: ...

    def stop(self) -> None: ...


class Workers(Protocol):
    """Starts fresh LLM-stream and executor processes (the runtime forks them)."""

    def start_llm(self) -> Worker: ...

    def start_executor(self) -> Worker: ...

    def preload_executor(self) -> int | None:
        """Prepare ``start_executor`` without blocking; a descriptor readable once it is ready (None: it is)."""
        ...


def coalesce_text(outbox: list[tuple[Dest, Message]]) -> list[tuple[Dest, Message]]:
    """Adjacent text for the UI in one message: when the agent falls behind a fast stream, the UI gets
    fewer, larger frames instead of a backlog (nothing is reordered, nothing dropped)."""
    merged: list[tuple[Dest, Message]] = []
    for dest, message in outbox:
        if merged and dest == "ui" and merged[-1][0] == "ui":
            last = merged[-1][1]
            if isinstance(message, TokenReceived) and isinstance(last, TokenReceived):
                merged[-1] = ("ui", TokenReceived(text=last.text + message.text))
                continue
            if isinstance(message, ReasoningReceived) and isinstance(last, ReasoningReceived):
                merged[-1] = ("ui", ReasoningReceived(text=last.text + message.text))
                continue
        merged.append((dest, message))
    return merged


def workers_first(outbox: list[tuple[Dest, Message]]) -> list[tuple[Dest, Message]]:
    """The workers' messages before the UI's, each destination's in their order: a write wakes its reader, which
    may take this CPU at once, so a request or a tool run queued behind the UI's messages started only once the UI
    had handled them. Nothing the UI is told depends on a worker's answer to this flush (answers come back
    through this process, after the flush)."""
    return [item for item in outbox if item[0] != "ui"] + [item for item in outbox if item[0] == "ui"]


class AgentShell:
    """One agent process: the core plus its channels; ``run`` returns when it should exit."""

    def __init__(self, ui_conn: Connection, core: AgentCore, workers: Workers) -> None:
        self.ui = Channel[UiToAgent](ui_conn, UiToAgent, "ui->agent")
        self.core = core
        self.workers = workers
        self.llm = workers.start_llm()
        self._executor: Worker | None = None
        self._executor_ready: int | None = None
        """While the executor's code is imported on a thread: readable once the executor can be forked."""
        self.pgids: dict[str, int] = {}
        self.ui_gone = False
        self.llm_heard = time.monotonic()
        self.readiness = Readiness()

    @property
    def executor(self) -> Worker:
        """The executor process, started on first use (``run`` starts it once the first messages are sent)."""
        if self._executor is None:
            self._executor_ready = None
            self._executor = self.workers.start_executor()
        return self._executor

    @executor.setter
    def executor(self, worker: Worker) -> None:
        self._executor = worker

    def _guard(self, step: Callable[_P, None], *args: _P.args, **kwargs: _P.kwargs) -> None:
        try:
            step(*args, **kwargs)
        except Exception as exc:
            import traceback  # only then: every module the agent imports is copied into the executor (ADR 0053)

            traceback.print_exc(file=sys.stderr)
            try:
                self.core.on_internal_error(f"{type(exc).__name__}: {exc}")
            except Exception:
                traceback.print_exc(file=sys.stderr)

    def flush(self) -> None:
        """Send the core's outbox; a dead worker is restarted and the core told."""
        for line in self.core.log:
            print(f"dashfloat agent: {line}", file=sys.stderr)
        self.core.log.clear()
        outbox, self.core.outbox = coalesce_text(self.core.outbox), []
        for dest, message in workers_first(outbox):
            self._send(dest, message)
        if self.core.outbox:  # sending can itself produce messages (a worker died and was told)
            self.flush()

    def _send(self, dest: Dest, message: Message) -> None:
        if dest == "ui":
            if not self.ui_gone:
                try:
                    self.ui.send(message)
                except PeerDied:
                    self.ui_gone = True
        elif dest == "llm":
            self.llm_heard = time.monotonic()
            try:
                self.llm.channel.send(message)
            except PeerDied:
                self._llm_died()
        else:
            try:
                self.executor.channel.send(message)
            except PeerDied:
                self._executor_died()

    def _llm_died(self, reason: str = "") -> None:
        reason = reason or self.llm.exit_reason()
        self.llm.channel.close()
        self.llm = self.workers.start_llm()
        # Mid-stream the core reports it as the stream's failure; otherwise it is said here, once.
        if self.core.waiting != "stream" and not self.core.shutting_down:
            self._announce_restart("the model stream process", reason)
        self._guard(self.core.on_llm_died, reason)

    def _executor_died(self, reason: str = "") -> None:
        reason = reason or self.executor.exit_reason()
        self._read_last_groups(self.executor.channel)
        self.executor.channel.close()
        for pgid in self.pgids.values():
            kill_group(pgid)  # commands it ran die with it: no orphans
        self.pgids.clear()
        self.executor = self.workers.start_executor()
        # With a call or a restore in flight the core reports it in that call's result; otherwise here, once.
        if self.core.waiting not in ("preview", "tool", "restore", "mention") and not self.core.shutting_down:
            self._announce_restart("the executor process", reason)
        self._guard(self.core.on_executor_died, reason)

    def _read_last_groups(self, channel: Channel[ExecutorToAgent]) -> None:
        """Read what a dead executor wrote before dying, for the groups it reported: its death may be noticed by a
        send (an Esc's cancel) with a CommandStarted still unread, and a command it released must die with it
        (ADR 0050). The rest is dropped: the core reports the call in flight as failed."""
        while True:
            try:
                if not channel.poll():
                    return
                message = channel.recv()
            except ProtocolError:
                continue  # that frame is lost; the next may still be whole
            except (PeerDied, OSError):
                return
            if isinstance(message, CommandStarted):
                self.pgids[message.call_id] = message.pgid
            elif isinstance(message, ToolFinished):
                self.pgids.pop(message.call_id, None)
            elif isinstance(message, JobStarted):  # issue 36
                self.pgids[f"job {message.job_id}"] = message.pgid

    def _start_executor(self) -> None:
        _ = self.executor

    def _announce_restart(self, what: str, reason: str) -> None:
        text = f"{what} died ({reason}); a fresh one was started"
        self.core.outbox.append(("ui", SystemEntry(text=text, level="warning")))

    def _from_ui(self) -> None:
        while not self.ui_gone and self.ui.poll():
            try:
                message = self.ui.recv()
            except PeerDied:
                self.ui_gone = True
                return
            except ProtocolError as exc:
                self.core.outbox.append(("ui", SystemEntry(text=str(exc), level="error")))
                continue
            self._guard(self.core.on_ui, message)

    def _from_llm(self) -> None:
        channel = self.llm.channel
        while self.llm.channel is channel and channel.poll():
            try:
                message: LlmToAgent = channel.recv()
            except PeerDied:
                self._llm_died()
                return
            except ProtocolError as exc:
                self.llm.stop()
                self._llm_died(str(exc))
                return
            self.llm_heard = time.monotonic()
            self._guard(self.core.on_llm, message)

    def _from_executor(self) -> None:
        channel = self.executor.channel
        while self.executor.channel is channel and channel.poll():
            try:
                message: ExecutorToAgent = channel.recv()
            except PeerDied:
                self._executor_died()
                return
            except ProtocolError as exc:
                self.executor.stop()
                self._executor_died(str(exc))
                return
            if isinstance(message, CommandStarted):
                self.pgids[message.call_id] = message.pgid
            elif isinstance(message, ToolFinished):
                self.pgids.pop(message.call_id, None)
            elif isinstance(message, JobStarted):  # a background job's group dies with the executor too (issue 36)
                self.pgids[f"job {message.job_id}"] = message.pgid
            elif isinstance(message, JobExited):
                self.pgids.pop(f"job {message.job_id}", None)
            self._guard(self.core.on_executor, message)

    def run(self) -> None:
        # The first messages (the window discovery, the ready message) go before the executor is started: its
        # imports would compete with the LLM worker's for the two cores on the first request's path (issue 19).
        # So does what the UI sent meanwhile (a headless run's prompt): its session file is written and fsynced, and
        # its request goes while the window is asked (ADR 0052). The executor's code is then imported on a thread, so
        # the window's arrival is answered at once rather than after that import (ADR 0045); the executor is forked
        # when it is done (or on first use, should a tool be needed before).
        self.flush()
        self._from_ui()
        self.flush()
        self._executor_ready = self.workers.preload_executor()
        if self._executor_ready is None:
            self._start_executor()
        deadline: float | None = None
        while True:
            self.flush()
            if self.ui_gone and not self.core.shutting_down:
                self._guard(self.core.on_ui, Shutdown())
                self.flush()
            if self.core.shutting_down:
                deadline = deadline or time.monotonic() + SHUTDOWN_GRACE_S
                if self.core.phase == "idle" or time.monotonic() >= deadline:
                    break
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if self.core.waiting in ("stream", "summary") and not self.core.window.answer_held():
                # Before its first event a stream may wait out the first-byte deadline (prompt processing).
                patience = self.core.idle_timeout_s if self.core.answered else self.core.first_byte_timeout_s
                silent_limit = patience + LLM_WATCHDOG_SLACK_S
                silent_for = time.monotonic() - self.llm_heard
                if silent_for >= silent_limit:
                    self.llm.stop()
                    self._llm_died(f"it sent nothing for {silent_for:.0f} s and was stopped")
                    continue
                timeout = min(timeout if timeout is not None else silent_limit, silent_limit - silent_for)
            llm = self.llm
            sources: list[Connection | int] = [llm.channel.conn, llm.sentinel]
            executor = self._executor
            if executor is not None:
                sources += [executor.channel.conn, executor.sentinel]
            elif self._executor_ready is not None:
                sources.append(self._executor_ready)
            if not self.ui_gone:
                sources.append(self.ui.conn)
            ready = self.readiness.wait(sources, timeout)
            if self._executor_ready is not None and self._executor_ready in ready:
                self._start_executor()
            if self.ui.conn in ready:
                self._from_ui()
            if llm.channel.conn in ready or llm.sentinel in ready:
                self._from_llm()
                if llm.sentinel in ready and self.llm is llm:
                    self._llm_died()
            if executor is not None and (executor.channel.conn in ready or executor.sentinel in ready):
                self._from_executor()
                if executor.sentinel in ready and self.executor is executor:
                    self._executor_died()
        self.flush()
        running = [self.llm] if self._executor is None else [self.llm, self._executor]
        for worker in running:  # asked together, they wind down (and the kernel tears them down) at once
            worker.ask_stop()
        for worker in running:
            worker.stop()
        for pgid in self.pgids.values():
            kill_group(pgid)


def serve(ui_conn: Connection, options: AgentOptions, workers: Workers) -> None:
    """The agent process main loop, until Shutdown or the UI's end of the pipe closes."""
    AgentShell(ui_conn, build_core(options), workers).run()
