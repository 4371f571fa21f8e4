"""The main process's end of the agent: start, watch, restart and stop the agent process."""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Final

import msgspec

from dashfloat.agent import AGENT_PROCESS_NAME, AgentOptions
from dashfloat.channel import Channel, PeerDied, ProtocolError
from dashfloat.procutil import FORK, stop_process
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


def _agent_main(conn: Connection, options_json: bytes, log_path: str, close_fds: list[int]) -> None:
    from dashfloat.agent import agent_process_main  # in the forked child: the main process never loads it

    agent_process_main(conn, options_json, log_path, close_fds)


class AgentProcess:
    """The UI's AgentLink: a channel to the agent that survives the agent's death."""

    def __init__(self, options: AgentOptions, log_path: str = "") -> None:
        self.options = options
        self.log_path = log_path
        self.session_id = ""
        self.restarts: deque[float] = deque()
        self.gave_up = False
        self._dead_r, self._dead_w = os.pipe()  # what fileno() offers once we stop restarting
        self._start()

    def _start(self) -> None:
        ours, theirs = FORK.Pipe()
        options = self.options
        if self.session_id:
            options = msgspec.structs.replace(
                options, resume_id=self.session_id, replay=False, continue_latest=False, notice=""
            )
        self.process = FORK.Process(
            target=_agent_main,
            args=(
                theirs,
                msgspec.json.encode(options),
                self.log_path,
                [ours.fileno(), self._dead_r, self._dead_w],
            ),
            name=AGENT_PROCESS_NAME,
        )
        self.process.start()
        theirs.close()
        self.channel = Channel[AgentToUi](ours, AgentToUi, "agent->ui")

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
        if len(self.restarts) > MAX_RESTARTS:
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

    def _ask_shutdown(self, process: BaseProcess) -> None:
        self.send(Shutdown())

    def shutdown(self) -> None:
        """Stop the agent and everything under it; bounded by SHUTDOWN_WAIT_S plus a SIGKILL."""
        # a SIGKILLed agent's workers die with it (PR_SET_PDEATHSIG)
        stop_process(self.process, 0.0 if self.gave_up else SHUTDOWN_WAIT_S, ask=self._ask_shutdown)
        self.channel.close()
        os.close(self._dead_r)
        os.close(self._dead_w)
