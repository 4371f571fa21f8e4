"""The one exception a tool raises to say "this call fails, here is why" (it becomes an error result)."""

from __future__ import annotations

from dashfloat.protocol import ToolFailed


class ToolError(Exception):
    """A call that cannot be carried out; ``str(exc)`` is the model-facing message."""


def error_result(message: str) -> ToolFailed:
    """The seed's error shape."""
    return ToolFailed(error=message)


def os_message(exc: OSError, path: str) -> str:
    """A short, model-facing description of a file-system failure on ``path``."""
    match exc:
        case FileNotFoundError():
            return f"file not found: {path}"
        case IsADirectoryError():
            return f"is a directory: {path}"
        case NotADirectoryError():
            return f"not a directory (or a parent is a file): {path}"
        case PermissionError():
            return f"permission denied: {path}"
        case _:
            return f"{exc.strerror or exc}: {path}"
