"""In-process UI harness: the real TuiShell on a pipe input, its VT100 output drawn into a pyte screen."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pyte
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output.vt100 import Vt100_Output

from dashfloat.protocol import AgentToUi, UiToAgent
from dashfloat.ui import TICK_S, TuiShell, UiOptions


class PipeLink:
    """An AgentLink over a real OS pipe: ``push`` queues messages and makes the fd readable."""

    def __init__(self) -> None:
        self.sent: list[UiToAgent] = []
        self._queue: list[AgentToUi] = []
        self._r, self._w = os.pipe()
        self.swap_fd_on_receive = False
        self.reuse_fd_on_receive = False
        self.closed: list[int] = []

    def fileno(self) -> int:
        return self._r

    def push(self, *messages: AgentToUi) -> None:
        self._queue.extend(messages)
        os.write(self._w, b"x")

    def send(self, message: UiToAgent) -> None:
        self.sent.append(message)

    def receive(self) -> list[AgentToUi]:
        os.read(self._r, 65536)
        out, self._queue = self._queue, []
        if self.swap_fd_on_receive:  # like the runtime after restarting a dead agent
            self.closed += [self._r, self._w]
            self._r, self._w = os.pipe()
            self.swap_fd_on_receive = False
        if self.reuse_fd_on_receive:  # the same, the new pipe under the closed one's numbers
            r, w = os.pipe()
            os.dup2(r, self._r)  # closes the old pipe's end first
            os.dup2(w, self._w)
            os.close(r)
            os.close(w)
            self.reuse_fd_on_receive = False
        return out

    def close(self) -> None:
        for fd in (self._r, self._w, *self.closed):
            os.close(fd)


class ScreenWriter:
    """A text stream that feeds a pyte screen and answers cursor position requests like a terminal."""

    def __init__(self, screen: pyte.HistoryScreen, pipe: PipeInput) -> None:
        self.screen = screen
        self.stream = pyte.Stream(screen)
        self.encoding = "utf-8"
        self.errors = "strict"
        self.writes = 0
        self.written: list[str] = []
        """Everything written, as written."""
        screen.write_process_input = pipe.send_text  # type: ignore[method-assign]

    def write(self, data: str) -> int:
        self.writes += 1
        self.written.append(data)
        self.stream.feed(data)
        return len(data)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        raise OSError("no fd")


@dataclass
class Ui:
    """A running shell and the things around it."""

    shell: TuiShell
    link: PipeLink
    pipe: PipeInput
    screen: pyte.HistoryScreen
    writer: ScreenWriter
    size: list[int] = field(default_factory=list)
    exit_code: int | None = None

    def keys(self, data: str) -> None:
        self.pipe.send_text(data)

    def lines(self) -> list[str]:
        history = ["".join(ch.data for ch in row.values()).rstrip() for row in self.screen.history.top]
        return [*history, *(line.rstrip() for line in self.screen.display)]

    def text(self) -> str:
        return "\n".join(self.lines())

    def visible(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    def resize(self, cols: int, rows: int) -> None:
        self.size[:] = [cols, rows]
        self.screen.resize(rows, cols)
        self.shell.on_resize()  # what SIGWINCH calls

    async def until(self, check: Callable[[], bool], timeout_s: float = 5.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not check():
            if loop.time() > deadline:
                raise AssertionError("timed out; screen:\n" + self.text())
            await asyncio.sleep(TICK_S / 2)

    async def frames(self, n: int = 3) -> None:
        await asyncio.sleep(TICK_S * n)


@asynccontextmanager
async def running_ui(cols: int = 80, rows: int = 24, no_color_override: bool = False) -> AsyncIterator[Ui]:
    """A TuiShell running on the current loop until the block ends (then it is asked to exit)."""
    link = PipeLink()
    with create_pipe_input() as pipe:
        screen = pyte.HistoryScreen(cols, rows, history=2000, ratio=0.5)
        writer = ScreenWriter(screen, pipe)
        size = [cols, rows]
        output = Vt100_Output(writer, lambda: Size(rows=size[1], columns=size[0]), term="xterm-256color")  # type: ignore[arg-type]
        # pyte cuts lines on a resize as xterm does, and xterm says so with XTERM_VERSION (ADR 0033)
        env = {"TERM": "xterm-256color", "XTERM_VERSION": "pyte"}
        opts = UiOptions(no_color=no_color_override, approval="ask", model="m1", cwd="/w", env=env)
        shell = TuiShell(link, opts, input=pipe, output=output)
        ui = Ui(shell, link, pipe, screen, writer, size)
        task = asyncio.create_task(shell.run_async())
        await ui.until(lambda: "Idle" in ui.text())
        try:
            yield ui
        finally:
            # The test may already have exited (its own /exit, Ctrl-D): asking again while that exit is
            # under way raises ("not running" / "return value already set"), so ask only a live app.
            future = shell.app.future
            if not task.done() and shell.app.is_running and future is not None and not future.done():
                shell.app.exit(result=0)
            ui.exit_code = await asyncio.wait_for(task, 5)
            link.close()
