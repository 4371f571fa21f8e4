"""Headless mode's stand-in for the UI: prose to stdout, tool rows to stderr (or JSON lines)."""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, Final, Literal, TextIO, assert_never

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
    JobExited,
    JobOutput,
    JobStarted,
    LastResultShown,
    PatchedFile,
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
from dashfloat.runtime._events import (
    LimitName,
    Outcome,
    ResultUsage,
    RunResult,
    add_usage,
    changed_files,
    encode_event,
    patched_files,
)

if TYPE_CHECKING:
    from dashfloat.runtime._patch_link import PatchKeeper
from dashfloat.textsafe import defuse

# The exit codes a scheduler reads (docs/headless.md has the table; the CLI's --help repeats it).
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
"""The provider or the stream failed (or the agent died)."""
EXIT_USAGE: Final = 2
"""A flag, the configuration or the prompt was refused before the run started."""
EXIT_LIMIT: Final = 3
"""--max-episodes, --timeout, --budget-tokens, or the agent's own per-turn request cap ended the run."""
EXIT_REFUSED: Final = 4
"""A mutation was refused by policy and nobody was there to ask (headless ``--approve ask`` or ``edits``)."""
EXIT_INTERRUPTED: Final = 130
# The reader went away (`dashfloat -p … | head -1`): the shell's code for a death by SIGPIPE, with no traceback.
EXIT_BROKEN_PIPE: Final = 128 + signal.SIGPIPE

# A live output line without its newline is held this long at most (--verbose).
LIVE_PARTIAL_MAX_CHARS: Final = 1000

# The read loop wakes this often even when nothing arrives, to see a second Ctrl-C.
READ_WAKE_S: Final = 0.5

_EXIT_CODES: Final[dict[Outcome, int]] = {
    "completed": EXIT_OK,
    "stopped": EXIT_OK,
    "failed": EXIT_FAILED,
    "limit": EXIT_LIMIT,
    "refused": EXIT_REFUSED,
    "interrupted": EXIT_INTERRUPTED,
}


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
    link: AgentProcess,
    show: Callable[[AgentToUi], int | None],
    interrupts: Callable[[], int],
    out: TextIO,
    wake_s: Callable[[], float] = lambda: READ_WAKE_S,
) -> int:
    """Show the agent's messages until ``show`` returns an exit code; a second Ctrl-C ends it at once. ``wake_s``:
    how long the next wait may be (it runs before each wait, so a deadline is seen when it passes)."""
    while True:
        if interrupts() > 1:
            return EXIT_INTERRUPTED
        try:
            select.select([link.fileno()], [], [], wake_s())
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
        max_episodes: int | None = None,
        timeout_s: float | None = None,
        last_message_path: str | None = None,
        budget_tokens: int | None = None,
        patch: tuple[PatchKeeper, str] | None = None,
    ):
        self.link = link
        self.json_mode = json_mode
        self.out = out
        self.err = err
        self.live = False  # replayed history (a resumed session) is not printed
        self.outcome: Literal["completed", "failed", "cancelled", "stopped", "limit"] | None = None
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
        # What the result record and the limits need, noted from the messages as they pass.
        self.max_episodes = max_episodes
        self.timeout_s = timeout_s
        self.last_message_path = last_message_path
        self.started = time.monotonic()
        self.episodes = 0
        self.limit: LimitName | None = None
        self.refused = False
        self.session_id: str | None = None
        self.budget_tokens = budget_tokens
        self.patch = patch
        self.patched: list[PatchedFile] | None = None
        """What --patch wrote: every file the run changed (commands' too), with digests; None: no patch."""
        self.usage = ResultUsage()
        """The run's usage: the sum of every request's (``UsageShown(request=True)``)."""
        self.requests_reported = False
        self.changes: list[ChangeRecorded] = []
        self.tool_names: dict[str, str] = {}
        self.last_message: list[str] = []

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.interrupts += 1
        self.link.send(Cancel())

    def _on_sigterm(self, signum: int, frame: FrameType | None, then: Callable[[int, FrameType | None], Any]) -> None:
        """SIGTERM / SIGHUP: the cut answer's line is ended (the shell's prompt would follow it on the same line),
        then the run's own handler stops everything and exits without returning here. A ``--json`` log still ends
        in its result record."""
        with contextlib.suppress(OSError, ValueError, RuntimeError):  # RuntimeError: a write was under way
            if self.json_mode:
                self._result("terminated", 128 + signum)
            elif self.prose_line_open:
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
        self.started = time.monotonic()
        self.link.send(SubmitPrompt(text=prompt))
        code = read_until_exit(self.link, self._show, lambda: self.interrupts, self.out, self._wake_s)
        if code == EXIT_INTERRUPTED and self.outcome is None:  # a second Ctrl-C: the turn's end was not awaited
            self._finish("interrupted")
        return code

    def _wake_s(self) -> float:
        """The read loop's next wait; past --timeout the turn is cancelled (once) and its end awaited."""
        if self.timeout_s is None or self.limit is not None:
            return READ_WAKE_S
        left = self.started + self.timeout_s - time.monotonic()
        if left > 0:
            return min(READ_WAKE_S, left)
        self._cut("time", f"--timeout {self.timeout_s:g} s reached")
        return READ_WAKE_S

    def _cut(self, limit: LimitName, why: str) -> None:
        """A scheduler's bound was crossed: the turn is cancelled and the run ends as "limit"."""
        self.limit = limit
        self.link.send(Cancel())
        self._row(f"stopped: {why}")

    def _verdict(self) -> Outcome:
        """How the run ended, from the turn's outcome and what the printer saw on the way."""
        match self.outcome:
            case "cancelled":
                return "limit" if self.limit is not None else "interrupted"
            case "limit":
                self.limit = self.limit or "turn"
                return "limit"
            case "completed" | "stopped":
                return "refused" if self.refused else self.outcome
            case "failed" | None:
                return "failed"
            case _:
                assert_never(self.outcome)

    def _finish(self, outcome: Outcome) -> int:
        """The run is over: the final answer's file, the result record (``--json``), and the exit code."""
        code = _EXIT_CODES[outcome]
        if self.patch is not None:  # first: the answer's file, written next, is no change of the run's
            keeper, path = self.patch
            written = keeper.write(path)
            if written.error:
                self._row(f"--patch {defused(path)}: not written: {defused(written.error)}")
            else:
                self.patched = written.files
        if self.last_message_path is not None:
            try:
                with open(self.last_message_path, "w", encoding="utf-8") as file:
                    file.write("".join(self.last_message))
            except OSError as exc:
                why = exc.strerror or str(exc)
                self._row(f"--output-last-message {defused(self.last_message_path)}: not written: {defused(why)}")
        if self.json_mode:
            self._result(outcome, code)
        return code

    def _result(self, outcome: Outcome, code: int) -> None:
        record = RunResult(
            outcome=outcome,
            exit_code=code,
            session_id=self.session_id,
            episodes=self.episodes,
            duration_s=round(time.monotonic() - self.started, 3),
            usage=self.usage,
            changes=changed_files(self.changes) if self.patched is None else patched_files(self.patched),
            limit=self.limit if outcome == "limit" else None,
        )
        self.out.write(JSON_ENCODER.encode(record).decode() + "\n")

    def _show(self, message: AgentToUi) -> int | None:
        self._note(message)
        if not self.live and self.outcome is None and not (self.json_mode and isinstance(message, _NEVER_REPLAYED)):
            return None
        if self.json_mode:
            self.out.write(encode_event(message, self.tool_names).decode() + "\n")
        else:
            self._human(message)
        if isinstance(message, PhaseChanged) and message.phase == "idle" and self.outcome is not None:
            if self.wrote_prose and not self.json_mode:
                self.out.write("\n")
            code = self._finish(self._verdict())
            self.out.flush()
            return code
        return None

    def _note(self, message: AgentToUi) -> None:
        """What every message does to the run, shown or not (the display itself starts with the stream)."""
        match message:
            case PhaseChanged(phase="streaming"):
                self.live = True
                if self.max_episodes is not None and self.episodes >= self.max_episodes:
                    if self.limit is None:
                        self._cut("episodes", f"--max-episodes {self.max_episodes} reached")
                else:
                    self.episodes += 1
                    self.last_message = []  # the final answer is the last request's prose
            case PhaseChanged(phase="running"):
                self.live = True  # first when the prompt's @mentions are read before the stream
            case SessionStarted(session_id=session_id):
                self.session_id = session_id
            case TokenReceived(text=text) if self.live:
                self.last_message.append(text)
            case UsageShown(usage=usage, request=True) if self.live:
                self.requests_reported = True
                self.usage = add_usage(self.usage, usage)
                spent = self.usage.prompt_tokens + self.usage.completion_tokens
                if self.budget_tokens is not None and spent > self.budget_tokens and self.limit is None:
                    self._cut("budget", f"--budget-tokens {self.budget_tokens} crossed ({spent} tokens)")
            case UsageShown(usage=usage) if self.live and not self.requests_reported:
                self.usage = add_usage(ResultUsage(), usage)  # an agent that reports only the turn's last request
            case ChangeRecorded() if self.live:
                self.changes.append(message)
            case SystemEntry(text=text):
                for line in text.splitlines():
                    self._row(defused(line))
            case ConfirmRequested(ref=ref, subject=subject, always_asks=always_asks):
                # Nobody is there to press a key: what --approve did not allow is rejected.
                self.link.send(DecideConfirmation(ref=ref, decision="reject"))
                self.refused = True
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
                | LastResultShown()
                | JobStarted()  # background jobs (issue 36): --json events; a job's end has its SystemEntry row
                | JobOutput()
                | JobExited()
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
                | LastResultShown()  # /last: the TUI's only
                | JobStarted()  # issue 36
                | JobOutput()
                | JobExited()
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
