"""The Subprocess Executor: the only process that touches the user's files and runs commands.

Exports load on first use (``dashfloat/_startup/lazy.py``): the main process needs only ``SandboxProbe`` and
``detect_sandbox`` at start-up, not the tools, checkpoints and path index (~80 ms, issue 19).
"""

from typing import TYPE_CHECKING

from dashfloat._startup.lazy import lazy_exports

if TYPE_CHECKING:
    from dashfloat.executor._capture import HeadTail
    from dashfloat.executor._errors import ToolError
    from dashfloat.executor._exec import Command, run_command
    from dashfloat.executor._files import ABSENT_DIGEST, digest_of, locate
    from dashfloat.executor._limits import (
        EDIT_MAX_FILE_BYTES,
        EXEC_OUTPUT_MAX_BYTES,
        EXEC_TIMEOUT_S,
        LIST_MAX_ENTRIES,
        LOCATE_MAX_COUNT,
        PREVIEW_FULL_MAX_BYTES,
        PREVIEW_MAX_LINES,
        READ_MAX_BYTES,
        READ_MAX_LINES,
        READ_STREAM_THRESHOLD_BYTES,
    )
    from dashfloat.executor._patch import serve_patch
    from dashfloat.executor._sandbox_probe import Probe as SandboxProbe
    from dashfloat.executor._sandbox_probe import detect as detect_sandbox
    from dashfloat.executor._serve import serve
    from dashfloat.executor._tools import PREVIEW_MAX_LINE_CHARS, Preview, preview, preview_call, run, run_tool
    from dashfloat.executor.path_policy import BadPath, PathError, PathEscape, resolve

__all__ = [
    "ABSENT_DIGEST",
    "EDIT_MAX_FILE_BYTES",
    "EXEC_OUTPUT_MAX_BYTES",
    "EXEC_TIMEOUT_S",
    "LIST_MAX_ENTRIES",
    "LOCATE_MAX_COUNT",
    "PREVIEW_FULL_MAX_BYTES",
    "PREVIEW_MAX_LINES",
    "PREVIEW_MAX_LINE_CHARS",
    "READ_MAX_BYTES",
    "READ_MAX_LINES",
    "READ_STREAM_THRESHOLD_BYTES",
    "BadPath",
    "Command",
    "HeadTail",
    "PathError",
    "PathEscape",
    "Preview",
    "SandboxProbe",
    "ToolError",
    "detect_sandbox",
    "digest_of",
    "locate",
    "preview",
    "preview_call",
    "resolve",
    "run",
    "run_command",
    "run_tool",
    "serve",
    "serve_patch",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "HeadTail": "_capture",
        "ToolError": "_errors",
        "Command": "_exec",
        "run_command": "_exec",
        "ABSENT_DIGEST": "_files",
        "digest_of": "_files",
        "locate": "_files",
        "EDIT_MAX_FILE_BYTES": "_limits",
        "EXEC_OUTPUT_MAX_BYTES": "_limits",
        "EXEC_TIMEOUT_S": "_limits",
        "LIST_MAX_ENTRIES": "_limits",
        "LOCATE_MAX_COUNT": "_limits",
        "PREVIEW_FULL_MAX_BYTES": "_limits",
        "PREVIEW_MAX_LINES": "_limits",
        "READ_MAX_BYTES": "_limits",
        "READ_MAX_LINES": "_limits",
        "READ_STREAM_THRESHOLD_BYTES": "_limits",
        "SandboxProbe": "_sandbox_probe:Probe",
        "detect_sandbox": "_sandbox_probe:detect",
        "serve": "_serve",
        "serve_patch": "_patch",
        "PREVIEW_MAX_LINE_CHARS": "_tools",
        "Preview": "_tools",
        "preview": "_tools",
        "preview_call": "_tools",
        "run": "_tools",
        "run_tool": "_tools",
        "BadPath": "path_policy",
        "PathError": "path_policy",
        "PathEscape": "path_policy",
        "resolve": "path_policy",
    },
)
