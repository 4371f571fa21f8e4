"""Where a tool may touch the file system: inside the real path of the working directory, nowhere else."""

from __future__ import annotations

import os

__all__ = ["BadPath", "PathError", "PathEscape", "inside", "resolve"]


class PathError(ValueError):
    """A path argument that no tool may use."""


class PathEscape(PathError):
    """The path leads outside the working directory (lexically or through a symlink)."""


class BadPath(PathError):
    """The path is not a usable path at all (empty, NUL byte)."""


def inside(path: bytes, root: bytes) -> bool:
    """Byte-exact containment on a ``/`` boundary: ``/x/root`` never admits ``/x/root-evil``."""
    if root == b"/":
        return path.startswith(b"/")
    return path == root or path.startswith(root + b"/")


def resolve(path: str, root: str) -> str:
    """The real absolute path ``path`` names under ``root``, or PathError; see the three steps below."""
    if not isinstance(path, str):
        raise BadPath(f"path must be a string, got {type(path).__name__}")
    if path == "":
        raise BadPath("empty path")
    if "\0" in path:
        raise BadPath(f"path contains a NUL byte: {path!r}")
    try:
        path_b = os.fsencode(path)
    except UnicodeEncodeError:
        raise BadPath(f"path is not encodable as a file name: {path!r}") from None
    root_b = os.fsencode(os.path.normpath(os.path.abspath(root)))
    # 1. Lexical expansion: collapses `..` and lets an absolute path replace the root.
    lexical = os.path.normpath(os.path.join(root_b, path_b))
    # 2. Byte-prefix scope check on a `/` boundary.
    if not inside(lexical, root_b):
        raise PathEscape(f"path escapes the working directory: {path}")
    # 3. The deepest existing ancestor (a dangling symlink counts as existing) must really be inside;
    #    the lexical remainder below it does not exist, so it cannot be a symlink.
    ancestor, remainder = lexical, b""
    while not os.path.lexists(ancestor):
        ancestor, tail = os.path.split(ancestor)
        remainder = os.path.join(tail, remainder) if remainder else tail
    real_ancestor = os.path.realpath(ancestor)
    if not inside(real_ancestor, os.path.realpath(root_b)):
        raise PathEscape(f"path escapes the working directory: {path} (through a symlink)")
    resolved = os.path.join(real_ancestor, remainder) if remainder else real_ancestor
    if path.endswith("/") and not os.path.isdir(resolved):
        # normpath drops the slash; POSIX would refuse "file/" and must not create a file for "newdir/"
        raise BadPath(f"path ends in / but is not a directory: {path}")
    return os.fsdecode(resolved)
