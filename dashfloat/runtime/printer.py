"""Headless mode's stand-in for the UI: prose to stdout, tool rows to stderr (or JSON lines)."""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, Final, TextIO, assert_never

from dashfloat.catalogue import call_name, describe_change, summarize_call
from dashfloat.protocol import (
    JSON_ENCODER,
    AgentReady,
    AgentToUi,
    Cancel,
    ChangeRecorded,
    ConfirmRequested,
    ContextChanged,
    DecideConfirmation,
    PathsFound,
    PhaseChanged,
    PromptRestored,
    PromptsListed,
    ReasoningReceived,
    RestoreEnded,
    SessionCleared,
    SessionsListed,
    SessionStarted,
    SubmitPrompt,
    SystemEntry,
    TokenReceived,
    ToolCallShown,
    ToolOutputShown,
    ToolResultShown,
    TurnEnded,
    UsageShown,
    UserPromptShown,
)
from dashfloat.runtime._agent_link import AgentProcess
from dashfloat.textsafe import defuse

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_INTERRUPTED: Final = 130
# The reader went away (`dashfloat -p … | head -1`): the shell's code for a death by SIGPIPE, with no traceback.
EXIT_BROKEN_PIPE: Final = 128 + signal.SIGPIPE

# A live output line without its newline is held this long at most (--verbose).
LIVE_PARTIAL_MAX_CHARS: Final = 1000

# The read loop wakes this often even when nothing arrives, to see a second Ctrl-C.
READ_WAKE_S: Final = 0.5

_EXIT_CODES: Final = {"completed": EXIT_OK, "stopped": EXIT_OK, "failed": EXIT_FAILED, "limit": EXIT_FAILED}


def defused(text: str) -> str:
    """Text for a terminal's stderr, on one line: control characters (newlines too) in caret form."""
    return defuse(text, keep_newlines=False)


def defused_prose(text: str) -> str:
    """Model prose for a terminal's stdout: control characters in caret form as in the TUI, line breaks and tabs kept
    (a tab is left to the terminal: a chunk does not know its column)."""
    if text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return "\t".join(defuse(part, keep_newlines=True) for part in text.split("\t"))


def read_until_exit(
    link: AgentProcess, show: Callable[[AgentToUi], int | None], interrupts: Callable[[], int], out: TextIO
) -> int:
    """Show the agent's messages until ``show`` returns an exit code; a second Ctrl-C ends it at once."""
    while True:
        if interrupts() > 1:
            return EXIT_INTERRUPTED
        try:
            select.select([link.fileno()], [], [], READ_WAKE_S)
        except InterruptedError:
            continue
        for message in link.receive():
            code = show(message)
            if code is not None:
                out.flush()
                return code
        out.flush()  # once per batch, not once per message: a fast stream stays cheap


_NEVER_REPLAYED = (AgentReady, SessionStarted, SystemEntry)
"""What ``--json`` prints even before the turn's stream: never part of a resumed session's replayed transcript (the
messages held back until then). So ``agent_ready`` is a script's first event (the agent's first message, with the
model, the working directory and the sandbox), start-up notices and the session's id follow, then the turn; a later
``agent_ready`` says what changed (the context window, once discovered while the first request already streams)."""


class Printer:
    """Runs one turn through the agent and prints it; ``run`` returns the exit code."""

    def __init__(
        self,
        link: AgentProcess,
        json_mode: bool,
        out: TextIO = sys.stdout,
        err: TextIO = sys.stderr,
        verbose: bool = False,
    ):
        self.link = link
        self.json_mode = json_mode
        self.out = out
        self.err = err
        self.live = False  # replayed history (a resumed session) is not printed
        self.outcome: str | None = None
        self.interrupts = 0
        self.wrote_prose = False
        self.paragraph_break = False
        # Prose and tool rows share one screen when both streams are that terminal, or one log when both are the
        # same pipe or file (`2>&1`): a row must then start on a line of its own, so an unfinished prose line is
        # ended first (on stdout, where it belongs).
        self.shared_terminal = (_isatty(out) and _isatty(err)) or _same_file(out, err)
        # Prose on a terminal must not drive it (a title, a clear, a clipboard write); a pipe or file gets it as sent.
        self.prose_to_terminal = _isatty(out)
        self.prose_line_open = False
        self.verbose = verbose  # a running command's output on stderr as it comes (--verbose)
        self.live_partial = ""

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.interrupts += 1
        self.link.send(Cancel())

    def _on_sigterm(self, signum: int, frame: FrameType | None, then: Callable[[int, FrameType | None], Any]) -> None:
        """SIGTERM / SIGHUP: the cut answer's line is ended (the shell's prompt would follow it on the same line),
        then the run's own handler stops everything and exits without returning here."""
        if self.prose_line_open and not self.json_mode:
            with contextlib.suppress(OSError, ValueError, RuntimeError):  # RuntimeError: a write was under way
                self.out.write("\n")
                self.out.flush()
        then(signum, frame)

    def run(self, prompt: str) -> int:
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        stops = {stop: signal.getsignal(stop) for stop in (signal.SIGTERM, signal.SIGHUP)}
        for stop, handler in stops.items():
            if callable(handler):
                signal.signal(stop, functools.partial(self._on_sigterm, then=handler))
        try:
            return self._run(prompt)
        except BrokenPipeError:
            # Nobody reads any more: stop the turn, and let nothing else try to write to the closed pipe
            # (Python's flush at exit would print its own BrokenPipeError).
            self.link.send(Cancel())
            for stream in (self.out, self.err):
                try:
                    stream.flush()
                except (BrokenPipeError, ValueError):
                    _silence(stream)
            return EXIT_BROKEN_PIPE
        finally:
            signal.signal(signal.SIGINT, previous)
            for stop, handler in stops.items():
                signal.signal(stop, handler)

    def _run(self, prompt: str) -> int:
        self.link.send(SubmitPrompt(text=prompt))
        return read_until_exit(self.link, self._show, lambda: self.interrupts, self.out)

    def _show(self, message: AgentToUi) -> int | None:
        self._note(message)
        if not self.live and self.outcome is None and not (self.json_mode and isinstance(message, _NEVER_REPLAYED)):
            return None
        if self.json_mode:
            self.out.write(JSON_ENCODER.encode(message).decode() + "\n")
        else:
            self._human(message)
        if isinstance(message, PhaseChanged) and message.phase == "idle" and self.outcome is not None:
            if self.wrote_prose and not self.json_mode:
                self.out.write("\n")
            self.out.flush()
            if self.outcome == "cancelled":
                return EXIT_INTERRUPTED
            return _EXIT_CODES.get(self.outcome, EXIT_FAILED)
        return None

    def _note(self, message: AgentToUi) -> None:
        """What every message does to the run, shown or not (the display itself starts with the stream)."""
        match message:
            case PhaseChanged(phase="streaming" | "running"):
                self.live = True  # "running" first when the prompt's @mentions are read before the stream
            case SystemEntry(text=text):
                for line in text.splitlines():
                    self._row(defused(line))
            case ConfirmRequested(ref=ref, subject=subject, always_asks=always_asks):
                # Nobody is there to press a key: what --approve did not allow is rejected.
                self.link.send(DecideConfirmation(ref=ref, decision="reject"))
                why = (
                    f"{always_asks}, and headless mode asks nobody"
                    if always_asks
                    else ("headless mode asks nobody; pass --approve or --yes")
                )
                self._row(f"rejected {defused(call_name(subject))}: {defused(why)}")
            case TurnEnded(outcome=outcome):
                # even before any stream began: an agent that died before it saw the prompt ends the run too
                self.outcome = outcome
            case (
                AgentReady()
                | SessionStarted()
                | SessionCleared()
                | UserPromptShown()
                | TokenReceived()
                | ReasoningReceived()
                | PhaseChanged()
                | ToolCallShown()
                | ToolOutputShown()
                | ToolResultShown()
                | ChangeRecorded()
                | UsageShown()
                | ContextChanged()
                | SessionsListed()
                | PromptsListed()
                | PromptRestored()
                | RestoreEnded()
                | PathsFound()
            ):
                pass
            case _:
                assert_never(message)

    def _human(self, message: AgentToUi) -> None:
        match message:
            case TokenReceived(text=text):
                if self.paragraph_break:  # prose of a later episode starts a new paragraph
                    self.out.write("\n" if self.shared_terminal else "\n\n")  # (a shared screen has one already)
                    self.paragraph_break = False
                # Open before the write: an unbuffered stdout (PYTHONUNBUFFERED) has the text out before the next
                # line runs, and a SIGTERM there must still end it (a newline too many at worst).
                self.prose_line_open = self.prose_line_open or bool(text)
                self.out.write(defused_prose(text) if self.prose_to_terminal else text)
                self.wrote_prose = True
                if text:
                    self.prose_line_open = not text.endswith("\n")
            case ToolOutputShown(text=text):
                if self.verbose:
                    *complete, self.live_partial = (self.live_partial + text).split("\n")
                    self.live_partial = self.live_partial[-LIVE_PARTIAL_MAX_CHARS:]
                    for line in complete:
                        self._row(f"  │ {defused(line)}")
            case ToolCallShown(args=args):
                self.paragraph_break = self.wrote_prose
                self._row(f"⚙ {defused(summarize_call(args))}")
            case ChangeRecorded(name=name, path=path, summary=summary, approved_by=by, rule=rule):
                self._row(defused(describe_change(name, path, summary, by, rule)))
            case ToolResultShown(status=status, output=output):
                self.paragraph_break = self.wrote_prose
                if self.live_partial:
                    self._row(f"  │ {defused(self.live_partial)}")
                    self.live_partial = ""
                lines = [defused(line) for line in output.splitlines()]
                if status == "error" and lines:
                    self._row(f"→ error: {lines.pop(0)}")
                else:
                    self._row(f"→ {status}")
                for line in lines:
                    self._row(f"  {line}")
            case (
                AgentReady()
                | SessionStarted()
                | SessionCleared()
                | UserPromptShown()
                | ReasoningReceived()
                | PhaseChanged()
                | ConfirmRequested()
                | UsageShown()
                | ContextChanged()
                | SystemEntry()
                | TurnEnded()
                | SessionsListed()
                | PromptsListed()
                | PromptRestored()
                | RestoreEnded()
                | PathsFound()
            ):
                pass  # rows of their own above (system entries, confirmations), or nothing in headless mode
            case _:
                assert_never(message)

    def _row(self, text: str) -> None:
        """One line on stderr, on a line of its own even when prose shares the terminal."""
        if self.shared_terminal:
            if self.prose_line_open:
                self.out.write("\n")
                self.prose_line_open = False
            self.out.flush()  # what was printed before the row shows before it
        self.err.write(text + "\n")
        self.err.flush()


def _same_file(a: TextIO, b: TextIO) -> bool:
    """Whether two streams write to one pipe or file (``2>&1``)."""
    try:
        sa, sb = os.fstat(a.fileno()), os.fstat(b.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _silence(stream: TextIO) -> None:
    """Point the stream's fd at /dev/null, so the interpreter's last flush of it cannot fail."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
