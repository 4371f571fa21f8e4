"""Turning a tool result into the UI's outcome row: a status word and a bounded excerpt."""

from __future__ import annotations

from typing import Final, assert_never

from dashfloat.protocol import (
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


def result_excerpt(result: ToolResult) -> str:
    """At most 30 lines of what the tool produced, verbatim, the marker included; errors lead with their message.

    The marker counts as one of the 30, so the UI's own 30-line guard never cuts an excerpt (it once cut the
    marker and said `… 1 more lines`).
    """
    lines = _text(result).splitlines()
    if len(lines) <= RESULT_EXCERPT_MAX_LINES:
        return "\n".join(line[:RESULT_EXCERPT_MAX_LINE_CHARS] for line in lines)
    kept = RESULT_EXCERPT_MAX_LINES - 1
    excerpt = [line[:RESULT_EXCERPT_MAX_LINE_CHARS] for line in lines[:kept]]
    excerpt.append(f"… {len(lines) - kept} more lines")
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
