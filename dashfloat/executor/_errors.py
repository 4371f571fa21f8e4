"""The one exception a tool raises to say "this call fails, here is why" (it becomes an error result)."""

from __future__ import annotations

import errno
from typing import Final

from dashfloat.executor.path_policy import loop_message
from dashfloat.protocol import ToolFailed

ERROR_PATH_MAX_CHARS: Final = 200
"""A path named in an error is cut to this many characters (a model once sent a 6000-character one)."""


class ToolError(Exception):
    """A call that cannot be carried out; ``str(exc)`` is the model-facing message."""


def error_result(message: str) -> ToolFailed:
    """The seed's error shape."""
    return ToolFailed(error=message)


def os_message(exc: OSError, path: str) -> str:
    """A short, model-facing description of a file-system failure on ``path``."""
    if len(path) > ERROR_PATH_MAX_CHARS:
        path = path[: ERROR_PATH_MAX_CHARS - 1] + "…"
    match exc:
        case FileNotFoundError():
            return f"file not found: {path}"
        case IsADirectoryError():
            return f"is a directory: {path}"
        case NotADirectoryError():
            return f"not a directory (or a parent is a file): {path}"
        case PermissionError():
            return f"permission denied: {path}"
        case _ if exc.errno == errno.ELOOP:
            return loop_message(path)
        case _ if exc.errno == errno.ENAMETOOLONG:
            return f"path too long (a name over 255 bytes, or the whole path over 4096): {path}"
        case _:
            why = exc.strerror or str(exc)
            return f"{why[:1].lower()}{why[1:]}: {path}"  # one style with the messages above
