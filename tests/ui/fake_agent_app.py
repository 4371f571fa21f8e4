"""Test-only launcher: ``run_tui`` in this process, linked by a real pipe to a scripted fake-agent process.

    python -m tests.ui.fake_agent_app --log LOG [--cwd DIR] [--no-color]

The fake agent speaks the real protocol over a real ``multiprocessing`` pipe; every message it receives is
logged to LOG (JSON lines), so a test can prove keys -> messages, and what it sends reaches the screen.
Prompts it understands: ``stream N``, ``tool``, ``confirm PATH``, ``confirm-later PATH``, ``confirm-long PATH``,
``slow``, ``die``, ``replay N``, ``timed N`` (tokens ``«i»`` whose send times go to the log); anything else is
echoed as Markdown.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

import msgspec
import msgspec.structs

from dashfloat.channel import Channel, PeerDied
from dashfloat.protocol import (
    JSON_ENCODER,
    AgentReady,
    AgentToUi,
    Cancel,
    ConfirmRequested,
    DecideConfirmation,
    PhaseChanged,
    ReadFileArgs,
    SandboxState,
    SessionStarted,
    SubmitPrompt,
    SystemEntry,
    TokenReceived,
    ToolCallShown,
    ToolResultShown,
    TurnEnded,
    UiToAgent,
    Usage,
    UsageShown,
    UserPromptShown,
    WriteFileArgs,
)
from dashfloat.ui import UiOptions, run_tui

CONTEXT = multiprocessing.get_context("fork")
TOKEN_GAP_S = 0.002
SLOW_TOKEN_GAP_S = 0.02
CONFIRM_DELAY_S = 0.4


class _Agent:
    def __init__(self, conn: Connection, log_path: str) -> None:
        self.ch = Channel[UiToAgent](conn, UiToAgent, "ui->fake")
        self.log = open(log_path, "a", buffering=1)  # noqa: SIM115 - open for the process lifetime

    def note(self, **record: Any) -> None:
        self.log.write(json.dumps(record) + "\n")

    def send(self, *messages: AgentToUi) -> None:
        for m in messages:
            self.ch.send(m)

    def recv(self) -> UiToAgent:
        message = self.ch.recv()
        self.note(recv=json.loads(JSON_ENCODER.encode(message)))
        return message

    def pending_cancel(self, timeout_s: float) -> bool:
        if self.ch.poll(timeout_s):
            return isinstance(self.recv(), Cancel)
        return False

    def serve(self) -> None:
        self.send(
            AgentReady(
                model="fake-model",
                provider="fake",
                cwd=os.getcwd(),
                approval="ask",
                context_window=128_000,
                sandbox=SandboxState(mode="workspace-write"),
            ),
            SessionStarted(session_id="fake-session"),
        )
        self.note(ready=time.monotonic())
        while True:
            message = self.recv()
            if isinstance(message, SubmitPrompt):
                self.turn(message.text)

    def finish(self, outcome: str = "completed") -> None:
        self.send(UsageShown(usage=Usage(total_tokens=1234)), TurnEnded(outcome=outcome), PhaseChanged(phase="idle"))  # type: ignore[arg-type]

    def turn(self, text: str) -> None:
        word, _, arg = text.partition(" ")
        self.send(PhaseChanged(phase="streaming"))
        match word:
            case "stream":
                for i in range(int(arg or 10)):
                    self.send(TokenReceived(text=f"tok{i} "))
                    if self.pending_cancel(TOKEN_GAP_S):
                        return self.finish("cancelled")
                self.finish()
            case "slow":
                i = 0
                while not self.pending_cancel(SLOW_TOKEN_GAP_S):
                    self.send(TokenReceived(text=f"slow{i} "))
                    i += 1
                self.send(SystemEntry(text="cancelled by the user"))
                self.finish("cancelled")
            case "tool":
                self.send(
                    PhaseChanged(phase="running"),
                    ToolCallShown(id="t1", args=ReadFileArgs(path="notes.txt")),
                    ToolResultShown(id="t1", name="read_file", status="ok", output="first line\nsecond line"),
                )
                self.finish()
            case "confirm":
                self.confirm(arg)
            case "confirm-long":  # a 200-line write: the inline window shows 50, the full view all of it
                self.confirm(arg, [f"+line {i}" for i in range(1, 201)])
            case "confirm-later":  # the confirmation arrives while the user is typing
                time.sleep(CONFIRM_DELAY_S)
                self.confirm(arg)
            case "die":
                os._exit(3)
            case "replay":
                for i in range(int(arg)):
                    self.send(UserPromptShown(text=f"question {i}"), TokenReceived(text=f"answer {i}"))
                    self.send(PhaseChanged(phase="idle"), PhaseChanged(phase="streaming"))
                self.send(TokenReceived(text="replay done"))
                self.finish()
            case "timed":
                for i in range(int(arg)):
                    self.note(token=i, sent=time.monotonic())
                    self.send(TokenReceived(text=f"«{i}» "))
                    time.sleep(TOKEN_GAP_S * 5)
                self.finish()
            case _:
                self.send(TokenReceived(text=f"You said: **{text}**"))
                self.finish()
        return None

    def confirm(self, path: str, full: list[str] | None = None) -> None:
        args = WriteFileArgs(path=path, content="approved\n")
        lines = [f"+++ {path}", "+approved"] if full is None else [*full[:50], "[… 150 more lines not shown]"]
        self.send(
            ToolCallShown(id="w1", args=args),
            ConfirmRequested(
                ref=1,
                id="w1",
                subject=args,
                lines=lines,
                scope="write_file",
                summary=f"new file · +{len(full or lines)}",
                full="\n".join(full or lines),
            ),
            PhaseChanged(phase="confirming"),
        )
        while True:
            message = self.recv()
            if isinstance(message, DecideConfirmation):
                break
            if isinstance(message, Cancel):
                return self.finish("cancelled")
        if message.decision.startswith("approve"):
            with open(path, "w") as f:
                f.write("approved\n")
            result = ToolResultShown(id="w1", name="write_file", status="ok", output=f"wrote {path}")
        else:
            result = ToolResultShown(id="w1", name="write_file", status="rejected", output="")
        self.send(PhaseChanged(phase="running"), result)
        self.finish("stopped" if message.decision == "reject_stop" else "completed")
        return None


def _agent_main(conn: Connection, log_path: str) -> None:
    with contextlib.suppress(PeerDied):
        _Agent(conn, log_path).serve()


class FakeLink:
    """The AgentLink of this launcher: restarts the fake agent when it dies (fileno changes then)."""

    def __init__(self, log_path: str) -> None:
        self.log_path = log_path
        self._start()

    def _start(self) -> None:
        ours, theirs = CONTEXT.Pipe()
        self.process = CONTEXT.Process(target=_agent_main, args=(theirs, self.log_path), daemon=True)
        self.process.start()
        theirs.close()
        self.channel = Channel[AgentToUi](ours, AgentToUi, "fake->ui")

    def fileno(self) -> int:
        return self.channel.fileno()

    def send(self, message: UiToAgent) -> None:
        with contextlib.suppress(PeerDied):  # receive() notices and restarts
            self.channel.send(message)

    def receive(self) -> list[AgentToUi]:
        out: list[AgentToUi] = []
        while self.channel.poll():
            try:
                out.append(self.channel.recv())
            except (PeerDied, msgspec.DecodeError):
                self.process.join(1)
                self.channel.close()
                self._start()
                out += [
                    SystemEntry(text="the fake agent died; restarted it", level="error"),
                    PhaseChanged(phase="idle"),
                ]
                break
        return out

    def stop(self) -> None:
        self.process.kill()
        self.process.join()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--no-color", action="store_true")
    parser.add_argument("--cwd", default=".")
    parser.add_argument("--idle-tick", type=float, default=None)
    args = parser.parse_args()
    os.chdir(args.cwd)
    with open(args.log, "a") as f:
        f.write(json.dumps({"launched": time.monotonic()}) + "\n")
    link = FakeLink(args.log)
    try:
        options = UiOptions(
            no_color=args.no_color, approval="ask", model="fake-model", cwd=os.getcwd(), home=os.environ.get("HOME")
        )
        if args.idle_tick is not None:
            options = msgspec.structs.replace(options, idle_tick_s=args.idle_tick)
        return run_tui(link, options)
    finally:
        link.stop()


if __name__ == "__main__":
    sys.exit(main())
