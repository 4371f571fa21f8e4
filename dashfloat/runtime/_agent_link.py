"""The main process's end of the agent: start, watch, restart and stop the agent process."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import time
from collections import deque
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Final

import msgspec

from dashfloat._startup.fork import FORK, start_sharing
from dashfloat._startup.openssl import preload_openssl
from dashfloat.agent import AGENT_EXIT_SESSION_IN_USE, AGENT_PROCESS_NAME, AgentOptions
from dashfloat.channel import Channel, PeerDied, ProtocolError
from dashfloat.procutil import stop_process
from dashfloat.protocol import (
    AgentToUi,
    PhaseChanged,
    SessionCleared,
    SessionStarted,
    Shutdown,
    SystemEntry,
    TurnEnded,
    UiToAgent,
)

MAX_RESTARTS: Final = 5
RESTART_WINDOW_S: Final = 60.0
SHUTDOWN_WAIT_S: Final = 0.6
"""The agent's own shutdown (cancel, stop workers) must fit in this; then it is SIGKILLed."""


def _agent_main(conn: Connection, log_path: str, close_fds: list[int]) -> None:
    from dashfloat.agent import agent_process_main  # in the forked child: the main process never loads it

    agent_process_main(conn, log_path, close_fds)


def _at_eof(fd: int) -> bool:
    """Whether the socket ``fd`` (a duplex Pipe end) is closed by its peer and drained, read without consuming."""
    peek = socket.socket(fileno=os.dup(fd))
    try:
        return peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    finally:
        peek.close()


class AgentProcess:
    """The UI's AgentLink: a channel to the agent that survives the agent's death.

    ``options`` None forks the agent before the options are known (the main process reads the configuration
    meanwhile); ``configure`` sends them. The agent reads them as its pipe's first frame.
    """

    def __init__(self, options: AgentOptions | None, log_path: str = "") -> None:
        self.options = options
        self.log_path = log_path
        self.session_id = ""
        self.restarts: deque[float] = deque()
        self.gave_up = False
        self._dead_r, self._dead_w = os.pipe()  # what fileno() offers once we stop restarting
        self._start()

    def _start(self) -> None:
        preload_openssl()  # before the fork: the four processes share OpenSSL's pages
        ours, theirs = FORK.Pipe()
        self.process = FORK.Process(
            target=_agent_main,
            args=(theirs, self.log_path, [ours.fileno(), self._dead_r, self._dead_w]),
            name=AGENT_PROCESS_NAME,
        )
        start_sharing(self.process)
        theirs.close()
        self.channel = Channel[AgentToUi](ours, AgentToUi, "agent->ui")
        if self.options is not None:
            self._send_options(self.options)

    def configure(self, options: AgentOptions) -> None:
        """Give an agent started without options (``AgentProcess(None, …)``) its options; once only."""
        if self.options is not None:
            raise ValueError("the agent process already has its options")
        self.options = options
        self._send_options(options)

    def _send_options(self, options: AgentOptions) -> None:
        if self.session_id:  # a restart continues the conversation
            options = msgspec.structs.replace(
                options, resume_id=self.session_id, replay=False, continue_latest=False, notice=""
            )
        # An agent already dead cannot read them; receive() notices the death and restarts it with them.
        with contextlib.suppress(OSError):
            self.channel.conn.send_bytes(msgspec.json.encode(options))

    def held_fds(self) -> list[int]:
        """Our pipe ends: a process forked from ours later (the demo server) closes them, so that the agent still
        sees our death as the end of its pipe."""
        return [self.channel.fileno(), self._dead_r, self._dead_w]

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def fileno(self) -> int:
        return self._dead_r if self.gave_up else self.channel.fileno()

    def send(self, message: UiToAgent) -> None:
        if self.gave_up:
            return
        with contextlib.suppress(PeerDied):  # receive() notices the death and restarts
            self.channel.send(message)

    def receive(self) -> list[AgentToUi]:
        messages: list[AgentToUi] = []
        while not self.gave_up and self.channel.poll():
            try:
                message = self.channel.recv()
            except ProtocolError as exc:
                messages.append(SystemEntry(text=str(exc), level="error"))
                continue
            except PeerDied:
                messages.extend(self._restart())
                break
            if isinstance(message, SessionStarted):
                self.session_id = message.session_id
            elif isinstance(message, SessionCleared):
                self.session_id = ""
            messages.append(message)
        return messages

    def _restart(self) -> list[AgentToUi]:
        reason = stop_process(self.process, SHUTDOWN_WAIT_S, ask=None)  # its pipe closed: it is going
        self.channel.close()
        now = time.monotonic()
        self.restarts.append(now)
        while self.restarts and now - self.restarts[0] > RESTART_WINDOW_S:
            self.restarts.popleft()
        where = f" (details in {self.log_path})" if self.log_path else ""
        if self.process.exitcode == AGENT_EXIT_SESSION_IN_USE:
            # Another process took the session while the agent was down: a fresh one would be refused again.
            self.gave_up = True
            text = (
                f"the agent process stopped ({reason}), and its session {self.session_id} is now written by another "
                "process: not restarting it"
            )
        elif len(self.restarts) > MAX_RESTARTS:
            self.gave_up = True
            times = len(self.restarts)
            text = f"the agent process stopped ({reason}) {times} times in a minute; not restarting it{where}"
        else:
            self._start()
            kept = " with your conversation" if self.session_id else ""
            text = f"the agent process stopped unexpectedly ({reason}); restarted it{kept}{where}"
        return [
            SystemEntry(text=text, level="error"),
            TurnEnded(outcome="failed"),
            PhaseChanged(phase="idle"),
        ]

    def start_refused(self) -> bool:
        """Wait until the agent has started (it wrote its first message) or stopped; True when it stopped because the
        session it was to resume is another process's: taken between the launch's check and the agent's own lock,
        which the agent never answers with a new session (``AGENT_EXIT_SESSION_IN_USE``; ADR 0078)."""
        while True:
            ready, _, _ = select.select([self.channel.fileno(), self.process.sentinel], [], [])
            if self.process.sentinel in ready or _at_eof(self.channel.fileno()):
                break  # it stopped (its pipe closes with it: the end may be seen first)
            if ready:
                return False  # a message: it is up
        self.process.join(SHUTDOWN_WAIT_S)
        if self.process.exitcode != AGENT_EXIT_SESSION_IN_USE:
            return False  # died otherwise: receive() restarts it as ever
        self.gave_up = True
        return True

    def _ask_shutdown(self, process: BaseProcess) -> None:
        self.send(Shutdown())

    def _close_pipe(self, process: BaseProcess) -> None:
        self.channel.close()

    def shutdown(self) -> None:
        """Stop the agent and everything under it; bounded by SHUTDOWN_WAIT_S plus a SIGKILL."""
        # a SIGKILLed agent's workers die with it (PR_SET_PDEATHSIG)
        # Without options the agent waits for them, not for messages: closing the pipe tells it to go.
        ask = self._ask_shutdown if self.options is not None else self._close_pipe
        stop_process(self.process, 0.0 if self.gave_up else SHUTDOWN_WAIT_S, ask=ask)
        self.channel.close()
        os.close(self._dead_r)
        os.close(self._dead_w)
