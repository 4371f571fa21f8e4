"""One writer per session: an exclusive ``flock`` on ``<id>.lock`` beside ``<id>.jsonl`` while a process writes it.

The kernel releases a ``flock`` when the last descriptor of its open file description closes, so a lock held by a
process that died (even by SIGKILL) is free again at once: taking it over needs no stale-PID guessing. The PID,
host and start time written into the file are only for the refusal's message.

Invariants a maintainer must keep:

- A process holds each lock once (``_HELD``, counted): the TUI resuming the session it is already writing is the
  same writer, not a second one (two ``open`` calls would give two open file descriptions, which conflict).
- A forked child never holds its parent's locks (``_close_in_child``): the agent's workers are forked from it, and
  a worker outliving a crashed agent would otherwise keep the session locked against the agent's own restart.
- The lock file is never unlinked: unlinking while another process waits on the old inode would let two
  processes each lock a different file of the same name.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import msgspec

LOCK_SUFFIX: Final = ".lock"
HOLDER_MAX_BYTES: Final = 1024
"""The most of a lock file read for its holder: anything longer is not ours and is named as unknown."""


class LockHolder(msgspec.Struct, frozen=True):
    """Who holds a session: written into the lock file by the process that took it."""

    pid: int
    host: str
    since: str


class _Held:
    """A lock this process holds: its descriptor, and how many writers of this process share it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.count = 1


_HELD: dict[str, _Held] = {}


def _close_in_child() -> None:
    for held in _HELD.values():
        with contextlib.suppress(OSError):
            os.close(held.fd)  # the parent's copy keeps the lock: only this child's reference goes
    _HELD.clear()


os.register_at_fork(after_in_child=_close_in_child)


def lock_path(session_path: Path) -> Path:
    """``<dir>/<id>.lock`` for ``<dir>/<id>.jsonl``."""
    return session_path.with_suffix(LOCK_SUFFIX)


def read_holder(path: Path) -> LockHolder | None:
    """What the lock file at ``path`` says about its holder; None when it says nothing readable."""
    try:
        with open(path, "rb") as f:
            data = f.read(HOLDER_MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > HOLDER_MAX_BYTES:
        return None
    try:
        return msgspec.json.decode(data, type=LockHolder)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def describe(holder: LockHolder | None) -> str:
    """The holder as the refusal names it."""
    if holder is None:
        return "another process (it has not said which yet)"
    return f"process {holder.pid} on {holder.host} (since {holder.since})"


class Busy(Exception):
    """The lock is held by another process; ``holder`` is what its file says."""

    def __init__(self, holder: LockHolder | None) -> None:
        super().__init__(describe(holder))
        self.holder = holder


def acquire(session_path: Path) -> None:
    """Take the session's lock or raise ``Busy``; OSError when the lock file cannot be opened."""
    path = lock_path(session_path)
    key = os.path.abspath(path)
    if (held := _HELD.get(key)) is not None:
        held.count += 1
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise Busy(read_holder(path)) from None
        raise
    try:
        stamp = LockHolder(os.getpid(), socket.gethostname(), datetime.now(UTC).isoformat(timespec="seconds"))
        os.ftruncate(fd, 0)  # a dead holder's words go: the lock is ours now
        os.pwrite(fd, msgspec.json.encode(stamp), 0)
    except OSError:
        os.close(fd)
        raise
    _HELD[key] = _Held(fd)


def release(session_path: Path) -> None:
    """Give back one hold on the session's lock; the last one unlocks it (closing the descriptor does)."""
    key = os.path.abspath(lock_path(session_path))
    held = _HELD.get(key)
    if held is None:
        return
    held.count -= 1
    if held.count == 0:
        del _HELD[key]
        os.close(held.fd)


def probe(session_path: Path) -> None:
    """Raise ``Busy`` if another process holds the session now (the lock is taken and given back at once)."""
    acquire(session_path)
    release(session_path)
