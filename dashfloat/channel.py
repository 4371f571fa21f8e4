"""A typed, pickle-free channel over one multiprocessing pipe end."""

from __future__ import annotations

import select
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

import msgspec

from dashfloat.protocol import MSGPACK_ENCODER, msgpack_decoder

In = TypeVar("In")


class PeerDied(Exception):
    """The other end of the channel is gone (EOF or a broken pipe)."""


class ProtocolError(Exception):
    """A frame arrived that is not a message of this channel's union."""


class Channel(Generic[In]):
    """``send`` any message, ``recv`` one of ``union``; only bytes cross the pipe."""

    def __init__(self, conn: Connection, union: Any, name: str) -> None:
        self.conn = conn
        self.name = name
        self._decoder = msgpack_decoder(union)
        self._poller: select.poll | None = None

    def fileno(self) -> int:
        return self.conn.fileno()

    def send(self, message: msgspec.Struct) -> None:
        try:
            self.conn.send_bytes(MSGPACK_ENCODER.encode(message))
        except (OSError, EOFError) as exc:
            raise PeerDied(f"{self.name}: {exc}") from exc

    def recv(self) -> In:
        try:
            frame = self.conn.recv_bytes()
        except (OSError, EOFError) as exc:
            raise PeerDied(f"{self.name}: peer closed the pipe") from exc
        try:
            message: In = self._decoder.decode(frame)
        except msgspec.DecodeError as exc:
            raise ProtocolError(f"undecodable message on the {self.name} channel: {exc}") from exc
        return message

    def poll(self, timeout: float | None = 0.0) -> bool:
        """Whether a message (or the peer's end) is waiting, within ``timeout`` seconds (None: no limit).

        One poll object per channel: ``Connection.poll`` builds a selector on every call, which cost more than
        receiving the message itself when a stream's deltas arrive hundreds of times a second."""
        try:
            fd = self.conn.fileno()
            if self._poller is None:
                self._poller = select.poll()
                self._poller.register(fd, select.POLLIN)
            return bool(self._poller.poll(None if timeout is None else max(0.0, timeout) * 1000))
        except (OSError, EOFError, ValueError):
            return True  # the next recv reports PeerDied

    def close(self) -> None:
        self.conn.close()


class Readiness:
    """``multiprocessing.connection.wait`` for a loop that waits on the same sources again and again: the poll
    object is built once per set of sources, not on every call."""

    def __init__(self) -> None:
        self._fds: tuple[int, ...] = ()
        self._poller = select.poll()

    def wait(self, sources: Sequence[Connection | int], timeout: float | None = None) -> list[Connection | int]:
        """The sources that are readable (or closed) within ``timeout`` seconds (None: no limit)."""
        by_fd = {(source if isinstance(source, int) else source.fileno()): source for source in sources}
        fds = tuple(by_fd)
        if fds != self._fds:
            self._poller = select.poll()
            for fd in fds:
                self._poller.register(fd, select.POLLIN)
            self._fds = fds
        events = self._poller.poll(None if timeout is None else max(0.0, timeout) * 1000)
        return [by_fd[fd] for fd, _ in events if fd in by_fd]
