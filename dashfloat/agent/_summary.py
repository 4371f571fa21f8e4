"""Turning a tool result into the UI's outcome row: a status word and a bounded excerpt."""

from __future__ import annotations

import re
from typing import Final, assert_never

from dashfloat.protocol import (
    CapturedOutput,
    CommandExited,
    CommandTimedOut,
    EditFileResult,
    JobReport,
    ListDirectoryResult,
    McpToolResult,
    ReadFileResult,
    ResultStatus,
    ToolCancelled,
    ToolFailed,
    ToolRejected,
    ToolResult,
    ToolResultShown,
    WriteFileResult,
)

RESULT_EXCERPT_MAX_LINES: Final = 30
RESULT_EXCERPT_MAX_LINE_CHARS: Final = 500
RESULT_EXCERPT_HEAD_LINES: Final = 10
"""Lines of a long result's start in its excerpt; the rest of the 30 are its end (issue 37)."""
CUT_MARKER_START: Final = "[… output cut: "
"""How the executor's line for a command output's dropped middle starts (executor/_capture.py)."""
_TYPE_MARKS: Final = {"dir": "/", "symlink": "@"}


def result_status(result: ToolResult) -> ResultStatus:
    """The outcome word of a result: which member it is (and, for a command, its exit code)."""
    match result:
        case ReadFileResult() | WriteFileResult() | EditFileResult() | ListDirectoryResult():
            return "ok"
        case CommandExited(exit_code=code):
            return "ok" if code == 0 else "error"
        case CommandTimedOut() | ToolFailed():
            return "error"
        case ToolRejected():
            return "rejected"
        case ToolCancelled():
            return "cancelled"
        case McpToolResult(is_error=is_error):
            return "error" if is_error else "ok"
        case JobReport(exit_code=code, ready=ready):  # background jobs (issue 36)
            return "ok" if code in (None, 0) and ready is not False else "error"
        case _:
            assert_never(result)


def _text(result: ToolResult) -> str:
    """What the tool produced, errors leading with their message."""
    match result:
        case ReadFileResult(content=content):
            return content
        case ListDirectoryResult(entries=entries):
            # Marked as `ls -F` does: a symlink read as a 4-byte file (its target's path length) misled.
            return "\n".join(f"{e.name}{_TYPE_MARKS.get(e.type, '')}  {e.size}" for e in entries)
        case CommandExited(exit_code=0, output=output):
            return output.output
        case CommandExited(exit_code=code, output=output, signal=killed_by):
            # The row says why it failed first: "→ error: exit code 3", not just the output's first line.
            why = f"killed by {killed_by}" if killed_by else f"exit code {code}"
            return f"{why}\n{output.output}" if output.output else why
        case CommandTimedOut(error=error, output=output):
            return f"{error}\n{output.output}" if output.output else error
        case ToolFailed(error=error):
            return error
        case ToolCancelled(output=output):
            return output.output if output is not None else ""
        case WriteFileResult() | EditFileResult() | ToolRejected():
            return ""
        case McpToolResult(text=text):
            return text
        case JobReport(job_id=job_id, state=state, exit_code=code, note=note, output=output):  # issue 36
            said = f"job {job_id}: {state}" + (f" (exit code {code})" if code is not None else "")
            return "\n".join(part for part in (said, note, output.output) if part)
        case _:
            assert_never(result)


def result_text(result: ToolResult) -> str:
    """All of what the tool produced as the agent kept it (/last shows it), errors leading with their message."""
    return _text(result)


def _cut_lines(result: ToolResult) -> int:
    """Lines the executor dropped from a command's output (its marker line stands for them), else 0."""
    match result:
        case (
            CommandExited(output=output)
            | CommandTimedOut(output=output)
            | ToolCancelled(output=CapturedOutput() as output)
        ):
            return output.cut_lines if output.cut_bytes else 0
    return 0


def _split_at_cut(before: str, marker: str) -> int:
    """1 when the executor's cut fell inside a line: the kept head (``before`` the marker) is then not the
    ``the first N`` bytes the marker names, since a line break was added after it (executor/_capture.py)."""
    named = re.search(r"the first (\d+) and", marker)
    return 1 if named is None or len(before.encode()) != int(named.group(1)) else 0


def result_excerpt(result: ToolResult) -> str:
    """At most 30 lines of what the tool produced, verbatim: its first RESULT_EXCERPT_HEAD_LINES and its last lines
    (a test run's summary is printed last), and between them a marker with the true count of the lines not shown.

    The marker counts as one of the 30, so the UI's own 30-line guard never cuts an excerpt (it once cut the
    marker and said `… 1 more lines`). The count includes the lines the executor itself dropped from a long command's
    output (issue 37: `… 5925 more lines` was said of 20 001).
    """
    lines = _text(result).splitlines()
    if len(lines) <= RESULT_EXCERPT_MAX_LINES:
        return "\n".join(line[:RESULT_EXCERPT_MAX_LINE_CHARS] for line in lines)
    tail_count = RESULT_EXCERPT_MAX_LINES - 1 - RESULT_EXCERPT_HEAD_LINES
    head, middle, tail = (
        lines[:RESULT_EXCERPT_HEAD_LINES],
        lines[RESULT_EXCERPT_HEAD_LINES:-tail_count],
        lines[-tail_count:],
    )
    hidden = len(middle)
    cut = _cut_lines(result)
    marker = next((n for n, line in enumerate(middle) if line.startswith(CUT_MARKER_START)), None)
    if cut and marker is not None:
        # The executor's marker line is no line of the output: the lines it stands for are. A line the cut split
        # shows as two pieces, one each side of the marker: one line, not two.
        before = "\n".join([*head, *middle[:marker]]) + "\n"
        hidden += cut - 1 - _split_at_cut(before, middle[marker])
    excerpt = [line[:RESULT_EXCERPT_MAX_LINE_CHARS] for line in head]
    excerpt.append(f"… {hidden} more {'line' if hidden == 1 else 'lines'}")
    excerpt += [line[:RESULT_EXCERPT_MAX_LINE_CHARS] for line in tail]
    return "\n".join(excerpt)


def result_shown(call_id: str, name: str, result: ToolResult) -> ToolResultShown:
    """The outcome row of call ``call_id``: its status word and excerpt."""
    return ToolResultShown(id=call_id, name=name, status=result_status(result), output=result_excerpt(result))


def command_context(command: str, result: ToolResult) -> str:
    """What a !command leaves for the model's next prompt: the command, how it ended, and its output."""
    status: str = result_status(result)
    output = ""
    match result:
        case CommandExited(exit_code=code, output=captured) | CommandTimedOut(exit_code=code, output=captured):
            output = captured.output
            status = status if code is None else f"exit code {code}"
        case ToolCancelled(output=captured):
            output = captured.output if captured is not None else ""
        case ToolFailed(error=error):
            output = error
        case (
            ReadFileResult()
            | WriteFileResult()
            | EditFileResult()
            | ListDirectoryResult()
            | ToolRejected()
            | McpToolResult()
            | JobReport()
        ):
            pass  # not a command's result: nothing printed
        case _:
            assert_never(result)
    return f"I ran `{command}` myself ({status}); its output:\n```\n{output.rstrip()}\n```"
