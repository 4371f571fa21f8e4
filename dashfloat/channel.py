"""A typed, pickle-free channel over one multiprocessing pipe end."""

from __future__ import annotations

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

    def poll(self, timeout: float = 0.0) -> bool:
        try:
            return self.conn.poll(timeout)
        except (OSError, EOFError):
            return True  # the next recv reports PeerDied

    def close(self) -> None:
        self.conn.close()
