"""Headless ``dashfloat --undo`` / ``--rewind N``: the reverse preview on stderr, applied only with --yes."""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Final, TextIO

from dashfloat.protocol import (
    Cancel,
    ConfirmRequested,
    DecideConfirmation,
    PromptRestored,
    RestoreConflict,
    RestoreEnded,
    RewindTo,
    SystemEntry,
    UndoTurn,
)
from dashfloat.runtime._agent_link import AgentProcess
from dashfloat.runtime.printer import EXIT_INTERRUPTED, defused, read_until_exit

EXIT_RESTORED: Final = 0
EXIT_NOT_ALL_RESTORED: Final = 1


class RestoreDriver:
    """Asks the agent for one undo or rewind and answers its confirmations as the flags say."""

    def __init__(
        self,
        link: AgentProcess,
        rewind_turns: int | None,
        apply: bool,
        out: TextIO = sys.stdout,
        err: TextIO = sys.stderr,
    ):
        self.link = link
        self.out = out
        self.rewind_turns = rewind_turns
        self.apply = apply
        self.err = err
        self.interrupts = 0

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.interrupts += 1
        self.link.send(Cancel())

    def run(self) -> int:
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            if self.rewind_turns is None:
                self.link.send(UndoTurn())
            else:
                self.link.send(RewindTo(prompt=-self.rewind_turns))
            return read_until_exit(self.link, self._show, lambda: self.interrupts, self.out)
        finally:
            signal.signal(signal.SIGINT, previous)

    def _write(self, text: str) -> None:
        for line in text.splitlines():
            self.err.write(f"{defused(line)}\n")
        self.err.flush()

    def _show(self, message: object) -> int | None:
        match message:
            case SystemEntry(text=text):
                self._write(text)
            case ConfirmRequested(ref=ref, subject=subject, lines=lines):
                if isinstance(subject, RestoreConflict):
                    # Headless asks nobody: a file changed since DashFloat wrote it is never overwritten here.
                    self._write(f"skipped {subject.path}: it changed since DashFloat wrote it")
                    self.link.send(DecideConfirmation(ref=ref, decision="reject"))
                    return None
                self._write("\n".join(lines))
                self.link.send(DecideConfirmation(ref=ref, decision="approve" if self.apply else "reject"))
            case PromptRestored(text=text):
                # the rewound prompt, for a script to edit and resend (the TUI puts it into the input)
                self.out.write(text if text.endswith("\n") else text + "\n")
                self.out.flush()
            case RestoreEnded(outcome=outcome):
                if outcome == "declined" and not self.apply and self.interrupts == 0:
                    self._write("nothing was applied: add --yes to apply it")
                if self.interrupts:
                    return EXIT_INTERRUPTED
                return EXIT_RESTORED if outcome == "restored" else EXIT_NOT_ALL_RESTORED
        return None
