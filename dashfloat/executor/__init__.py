"""The Subprocess Executor: the only process that touches the user's files and runs commands."""

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
from dashfloat.executor._sandbox import detect as detect_sandbox
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
]
