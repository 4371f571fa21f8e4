"""The HTTP side: a requests Session whose sockets the serve loop can shut down from another thread."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import requests
import requests.adapters
import urllib3
import urllib3.connection

from dashfloat.llm._limits import READ_CHUNK_BYTES

_local = threading.local()


def _register(sock: Any) -> None:
    callback: Callable[[socket.socket], None] | None = getattr(_local, "on_socket", None)
    if callback is not None and isinstance(sock, socket.socket):
        callback(sock)


class _HTTPConnection(urllib3.connection.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _register(self.sock)


class _HTTPSConnection(urllib3.connection.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _register(self.sock)


class _HTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class _Adapter(requests.adapters.HTTPAdapter):
    """Connections made through this adapter report their socket to the calling thread's callback."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}


def new_session(on_socket: Callable[[socket.socket], None]) -> requests.Session:
    """A Session for one stream; must be used from the thread that calls this."""
    _local.on_socket = on_socket
    session = requests.Session()
    adapter = _Adapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def shutdown(sock: socket.socket) -> None:
    """Unblock a reader in another thread and tell the server we are gone (FIN)."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def body_chunks(response: requests.Response) -> Iterator[bytes]:
    """Whatever bytes are available, as soon as they are (read1: no waiting for a full buffer)."""
    raw = response.raw
    while True:
        chunk = raw.read1(READ_CHUNK_BYTES)
        if not chunk:
            return
        yield chunk


def read_bounded(response: requests.Response, limit: int) -> bytes:
    """At most ``limit`` bytes of an error body (a hostile body cannot grow memory)."""
    parts: list[bytes] = []
    size = 0
    with contextlib.suppress(requests.RequestException, urllib3.exceptions.HTTPError, OSError):
        for chunk in body_chunks(response):
            parts.append(chunk)
            size += len(chunk)
            if size >= limit:
                break
    return b"".join(parts)[:limit]
