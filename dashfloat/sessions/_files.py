"""The state directory's two file primitives: write every byte, and replace a file atomically (durable)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (a short write is legal on any fd)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (a new or renamed file) survive a power loss."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: a private O_EXCL temp beside it, fsynced, renamed, the directory fsynced.

    A reader sees the old file or the new one, never a mix; after a power loss, never an empty file.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
