"""Where a tool may touch the file system: beneath the working directory fixed at start, nowhere else."""

from __future__ import annotations

import errno
import os
import stat
from typing import Final

from dashfloat.executor._openat2 import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, openat2, openat2_works

__all__ = ["BadPath", "PathError", "PathEscape", "Root", "RootGone", "SymlinkLoop", "inside", "loop_message", "resolve"]

# Every component of every path a tool opens is resolved by the kernel under these rules.
BENEATH: int = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS


PROTECTED_DIRS: Final = (b".git",)
"""Directories whose files run programs later, unseen by a review of the work tree (hooks, config): a write
there is asked every time, whatever the mode or rules."""


def protected_reason(located: bytes) -> str:
    """Why a write to ``located`` (from ``Root.locate``: symlinks resolved) must be asked, or ``""``."""
    parts = located.split(b"/")
    for name in PROTECTED_DIRS:
        if name in parts[:-1] or parts[-1] == name:
            return (
                f"inside {name.decode()}/: its hooks and config run programs later, and a diff of the work tree "
                "never shows them; asked every time"
            )
    return ""


class PathError(ValueError):
    """A path argument that no tool may use."""


class PathEscape(PathError):
    """The path leads outside the working directory (lexically or through a symlink)."""


class SymlinkLoop(PathError):
    """The path's symlinks lead round in a loop (ELOOP): nothing is there to read or write, inside or out."""


def loop_message(path: str) -> str:
    """What the model reads for ELOOP: a loop, not an escape (the review found it worded as one)."""
    return f"symlink loop: {path} (too many levels of symbolic links, ELOOP; a link leads back to itself)"


class BadPath(PathError):
    """The path is not a usable path at all (empty, NUL byte)."""


class RootGone(PathError):
    """The working directory was moved, deleted or replaced since the executor started."""


def inside(path: bytes, root: bytes) -> bool:
    """Byte-exact containment on a ``/`` boundary: ``/x/root`` never admits ``/x/root-evil``."""
    if root == b"/":
        return path.startswith(b"/")
    return path == root or path.startswith(root + b"/")


def _check_path(path: str) -> bytes:
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
    return path_b


def resolve(path: str, root: str, anchor: str | None = None) -> str:
    """The real absolute path ``path`` names under ``root``, or PathError; see the three steps below.

    ``anchor`` is the root's real path as fixed at start (``Root``); without it the root is resolved now.
    """
    path_b = _check_path(path)
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
    if not inside(real_ancestor, os.fsencode(anchor) if anchor is not None else os.path.realpath(root_b)):
        raise PathEscape(f"path escapes the working directory: {path} (through a symlink)")
    resolved = os.path.join(real_ancestor, remainder) if remainder else real_ancestor
    if path.endswith("/") and not os.path.isdir(resolved):
        # normpath drops the slash; POSIX would refuse "file/" and must not create a file for "newdir/"
        raise BadPath(f"path ends in / but is not a directory: {path}")
    return os.fsdecode(resolved)


class Root:
    """The working directory, fixed at start: a directory fd held for the executor's lifetime.

    Every tool path is resolved against it: with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) where the
    kernel has it (the kernel refuses any component that leaves the tree, at open time), otherwise with
    ``resolve`` anchored at the start-time real path. Before each call ``check`` makes sure the directory
    is still where it was: a moved, deleted or swapped root fails every tool instead of being re-resolved.
    """

    def __init__(self, path: str, use_openat2: bool | None = None, launch_real: bool = False) -> None:
        """``launch_real``: ``path`` is the real path the session was launched in (a restarted executor), so
        if it no longer resolves to itself the root is gone, not re-resolved to wherever it points now."""
        self.path = os.path.realpath(path)
        self._gone_at_start = ""
        self.fd = -1
        self._identity = (-1, -1)
        self.beneath = openat2_works() if use_openat2 is None else use_openat2
        if launch_real and self.path != os.path.abspath(path):
            self.path = os.path.abspath(path)
            self._gone_at_start = "was replaced by a symlink"
        self._path_b = os.fsencode(self.path)
        if self._gone_at_start:
            return
        try:
            self.fd = os.open(self.path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            if not launch_real:
                raise
            self._gone_at_start = "was moved or deleted"
            return
        st = os.fstat(self.fd)
        self._identity = (st.st_dev, st.st_ino)

    def close(self) -> None:
        """Release the directory fd (the executor holds it until it exits)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def check(self) -> None:
        """RootGone unless the start-time path still names the very directory we hold."""
        if self._gone_at_start:
            raise RootGone(self._gone(self._gone_at_start))
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            raise RootGone(self._gone("was moved or deleted")) from None
        if stat.S_ISLNK(st.st_mode):
            raise RootGone(self._gone("was replaced by a symlink"))
        if (st.st_dev, st.st_ino) != self._identity:
            raise RootGone(self._gone("was replaced by another directory"))

    def _gone(self, what: str) -> str:
        return (
            f"the working directory {self.path} {what} since DashFloat started; no tool reads or writes "
            "anything until DashFloat is restarted in the directory you mean"
        )

    def locate(self, path: str) -> bytes:
        """``path`` as a symlink-free path relative to the root (``.`` for the root), or PathError.

        The root is checked; the lexical steps refuse what is outside by name; the deepest existing
        ancestor is opened beneath the root fd (a symlink out is refused by the kernel) and its real path
        read back, so a symlink *inside* the tree is followed to its inside target.
        """
        self.check()
        if not self.beneath:
            real = os.fsencode(resolve(path, self.path, anchor=self.path))
            return os.path.relpath(real, self._path_b)
        path_b = _check_path(path)
        lexical = os.path.normpath(os.path.join(self._path_b, path_b))
        if not inside(lexical, self._path_b):
            raise PathEscape(f"path escapes the working directory: {path}")
        rel = os.path.relpath(lexical, self._path_b)
        ancestor, remainder = rel, b""
        while True:
            try:
                fd = self.open(ancestor, os.O_PATH, path=path)
                break
            except FileNotFoundError:
                # A dangling symlink is left in the remainder: writing replaces the link itself, inside.
                if ancestor == b".":
                    raise
                ancestor, tail = os.path.split(ancestor)
                ancestor = ancestor or b"."
                remainder = os.path.join(tail, remainder) if remainder else tail
        try:
            real = os.fsencode(os.readlink(f"/proc/self/fd/{fd}"))
            is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        finally:
            os.close(fd)
        if not inside(real, self._path_b):
            raise PathEscape(f"path escapes the working directory: {path} (through a symlink)")
        if path.endswith("/") and (remainder or not is_dir):
            raise BadPath(f"path ends in / but is not a directory: {path}")
        located = os.path.relpath(real, self._path_b)
        return os.path.normpath(os.path.join(located, remainder)) if remainder else located

    def open(self, rel: bytes, flags: int, mode: int = 0o666, path: str | None = None) -> int:
        """An fd for ``rel`` (from ``locate``) opened beneath the root; a symlink out raises PathEscape."""
        if not self.beneath:
            real = resolve(os.fsdecode(rel), self.path, anchor=self.path)
            return os.open(real, flags | os.O_CLOEXEC, mode)
        try:
            # openat2 refuses a mode without O_CREAT (unlike open, which ignores it)
            return openat2(self.fd, rel, flags, mode if flags & os.O_CREAT else 0, BENEATH)
        except OSError as exc:
            shown = path if path is not None else os.fsdecode(rel)
            if exc.errno == errno.ELOOP:
                raise self._loop_or_magic(rel, flags, shown) from None
            if exc.errno == errno.EXDEV:
                raise PathEscape(self._escape_message(rel, shown)) from None
            raise

    def _loop_or_magic(self, rel: bytes, flags: int, shown: str) -> PathError:
        """ELOOP under BENEATH is a symlink loop, or a /proc magic link (RESOLVE_NO_MAGICLINKS): told apart by
        opening again without that one rule (O_PATH: nothing is read)."""
        if flags & os.O_NOFOLLOW:
            return BadPath(f"is a symbolic link: {shown}")  # O_NOFOLLOW's ELOOP: the last component is one
        try:
            fd = openat2(self.fd, rel, os.O_PATH, 0, RESOLVE_BENEATH)
        except OSError as again:
            if again.errno == errno.ELOOP:
                return SymlinkLoop(loop_message(shown))
        else:
            os.close(fd)
        return PathEscape(f"path escapes the working directory: {shown} (through a /proc magic link)")

    def _escape_message(self, rel: bytes, shown: str) -> str:
        """EXDEV: the kernel refuses an absolute symlink, and one that steps above the root, even when the path
        ends inside; then the message says where it ends, so the model can use that path (nothing is opened)."""
        out = f"path escapes the working directory: {shown} (through a symlink)"
        try:
            real = os.fsencode(os.path.realpath(os.path.join(self._path_b, rel)))
        except (OSError, ValueError):
            return out
        if not inside(real, self._path_b):
            return out
        target = os.fsdecode(os.path.relpath(real, self._path_b))
        return (
            f"refused: {shown} goes through a symlink that is absolute or steps above the working directory, "
            f"which is never followed, although it ends inside, at {target}: use that path"
        )

    def parent(self, rel: bytes, create: bool) -> tuple[int, str]:
        """An O_PATH fd on the directory holding ``rel`` (made when ``create``), and the final name."""
        head, name = os.path.split(rel)
        if name in (b"", b".", b".."):
            raise BadPath("the working directory itself is not a file")
        fd = os.dup(self.fd)
        prefix = b"."
        for part in (p for p in head.split(b"/") if p and p != b"."):
            prefix = os.path.join(prefix, part)
            try:
                step = self.open(prefix, os.O_PATH | os.O_DIRECTORY)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)  # a plain name in a directory already beneath the root
                    step = self.open(prefix, os.O_PATH | os.O_DIRECTORY)
                except BaseException:
                    os.close(fd)
                    raise
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
            fd = step
        return fd, os.fsdecode(name)

    def real(self, rel: bytes) -> str:
        """The absolute path of ``rel`` under the start-time root (for a command's cwd and messages)."""
        return os.fsdecode(os.path.normpath(os.path.join(self._path_b, rel)))
