"""The HTTP side: one requests Session per process, whose sockets the serve loop can shut down from another thread.

The Session's pool keeps each provider connection alive across streams (no new TCP + TLS handshake per
episode); a stream that takes a kept-alive connection reports its socket just as one that connects does, so an
abort still cuts it.
"""

from __future__ import annotations

# First, before requests: its import without the modules this process never uses (_imports, ADR 0046).
from dashfloat.llm import _imports  # noqa: F401

# isort: split

import contextlib
import http.client
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import requests
import requests.adapters
import urllib3
import urllib3.connection

from dashfloat.llm._chunked import ChunkedBody
from dashfloat.llm._errors import StreamError
from dashfloat.llm._limits import READ_CHUNK_BYTES

_local = threading.local()


def _register(sock: Any) -> None:
    callback: Callable[[socket.socket], None] | None = getattr(_local, "on_socket", None)
    if callback is not None and isinstance(sock, socket.socket):
        callback(sock)


class _OneWriteRequests(urllib3.connection.HTTPConnection):
    """A request's header block and its body go out in one write: urllib3 writes the headers, then the body, which
    made two TLS records (two packets, and on the server two reads, often two wake-ups) where one does; http.client
    itself joins them. The header block waits for the body's first write, or for the response when no body
    follows."""

    _hold_next = False
    _held = b""

    def endheaders(self, message_body: Any = None, *, encode_chunked: bool = False) -> None:
        self._hold_next = True  # the next write is the header block
        try:
            super().endheaders(message_body, encode_chunked=encode_chunked)
        finally:
            self._hold_next = False

    def send(self, data: Any) -> None:
        if self._hold_next and isinstance(data, bytes):
            self._hold_next = False
            self._held = data
            return
        if self._held:
            held, self._held = self._held, b""
            if not isinstance(data, bytes):
                super().send(held)
            else:
                data = held + data
        super().send(data)

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        if self._held:
            held, self._held = self._held, b""
            super().send(held)
        return super().getresponse(*args, **kwargs)

    def close(self) -> None:
        self._held = b""
        super().close()


class _HTTPConnection(_OneWriteRequests):
    def connect(self) -> None:
        super().connect()
        _register(self.sock)


class _HTTPSConnection(_OneWriteRequests, urllib3.connection.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _register(self.sock)


def _reused(conn: Any) -> Any:
    if conn.sock is not None:  # a kept-alive connection from the pool (a new one reports itself in connect)
        _register(conn.sock)
    return conn


class _HTTPPool(urllib3.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection

    def _get_conn(self, timeout: float | None = None) -> Any:
        return _reused(super()._get_conn(timeout))


class _HTTPSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection

    def _get_conn(self, timeout: float | None = None) -> Any:
        return _reused(super()._get_conn(timeout))


class _Adapter(requests.adapters.HTTPAdapter):
    """Connections made through this adapter report their socket to the calling thread's callback."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}


_process_session: tuple[int, requests.Session] | None = None
"""(pid, Session): a Session's pool must never cross a fork (two processes would share one socket)."""
_process_session_lock = threading.Lock()


def process_session(on_socket: Callable[[socket.socket], None] | None = None) -> requests.Session:
    """This process's Session; the sockets the calling thread then uses (new or reused) go to ``on_socket``.
    Never closed: its connections live as long as the process."""
    global _process_session
    _local.on_socket = on_socket
    pid = os.getpid()
    with _process_session_lock:
        if _process_session is None or _process_session[0] != pid:
            session = requests.Session()
            adapter = _Adapter()
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            _process_session = (pid, session)
        return _process_session[1]


def shutdown(sock: socket.socket) -> None:
    """Unblock a reader in another thread and tell the server we are gone (FIN)."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def body_chunks(response: requests.Response) -> Iterator[bytes]:
    """The body's data as it arrives: each socket read gives what it carried (``b""`` for a read of framing only,
    so a caller can still watch its deadline on every read).

    A chunked body (every SSE stream) is decoded here (``ChunkedBody``) from the socket's buffered reader, which
    http.client reads its body from too: one read of many chunks costs one pass, where http.client's ``read1``
    takes a call per chunk and a paced provider sends a chunk per token. A read failure goes through urllib3's own
    error handling (same exceptions, the connection dropped); at the body's end http.client's response is closed
    as it closes it itself, and urllib3 then returns the connection to the pool.
    """
    raw = response.raw
    fp = getattr(raw, "_fp", None)
    catcher = getattr(raw, "_error_catcher", None)
    source = getattr(fp, "fp", None)
    # The socket: the connection's, or (a response that closes its connection at the end: the connection has let go
    # of it) the one http.client's reader reads, behind socket.makefile's SocketIO.
    sock = getattr(getattr(raw, "connection", None), "sock", None)
    sock = sock or getattr(getattr(source, "raw", None), "_sock", None)
    tls = sock if isinstance(sock, ssl.SSLSocket) else None
    if not (
        getattr(raw, "chunked", False)
        and isinstance(fp, http.client.HTTPResponse)
        and fp.chunk_left is None  # http.client has read none of the body
        and catcher is not None
        and source is not None
    ):
        # A body that ends when the connection closes (no length, not chunked: an SSE server speaking HTTP/1.0)
        # takes its waiting TLS records from http.client directly: urllib3 has no length to keep count of, and its
        # error handling would take "nothing more yet" for a broken connection.
        close_delimited = isinstance(fp, http.client.HTTPResponse) and fp.length is None and not fp.chunked
        while chunk := raw.read1(READ_CHUNK_BYTES):
            if tls is not None and close_delimited and isinstance(fp, http.client.HTTPResponse):
                chunk = with_records_waiting(fp.read1, tls, chunk)
            yield chunk
        return
    body = ChunkedBody()
    read1 = source.read1
    while not body.done:
        try:
            read = read1(READ_CHUNK_BYTES)
            if not read:
                raise http.client.IncompleteRead(b"")  # closed before the last chunk, as http.client says it
        except Exception:
            with catcher():
                raise
        if tls is not None and len(read) < READ_CHUNK_BYTES:
            read = with_records_waiting(read1, tls, read)
        yield body.feed(read)
        if body.error is not None:
            raise body.error  # after the data before it
    fp.close()  # what http.client does after the last chunk: the socket stays open for the next request
    raw.read1(READ_CHUNK_BYTES)  # b"": urllib3 sees the end and releases the connection


def with_records_waiting(read1: Callable[[int], bytes], sock: ssl.SSLSocket, first: bytes) -> bytes:
    """``first`` and the TLS records that have already arrived behind it, up to READ_CHUNK_BYTES in all, without
    waiting for more.

    A plain socket's read takes everything the kernel holds; a TLS socket's takes one record (OpenSSL decrypts
    record by record), and a provider that writes each event on its own sends one record per event. Without this,
    a read was one event, and the batching window after each small read (``holds_next_read``) let a paced stream
    over TLS — every real provider — through at one event per window. The socket is non-blocking meanwhile, so a
    read finds a whole record or nothing (a peek at the socket could not tell a record from a TLS message that
    carries no data, and a read would then wait for the next event). A failure here ends the draining only: the
    next read meets it again, after ``first`` was delivered."""
    parts = [first]
    size = len(first)
    timeout = sock.gettimeout()
    try:
        sock.settimeout(0.0)
        while size < READ_CHUNK_BYTES:
            more = read1(READ_CHUNK_BYTES - size)
            if not more:
                break  # closed: the next read says so
            parts.append(more)
            size += len(more)
    except OSError:  # ssl.SSLWantReadError: nothing more has arrived (or a failure, met again by the next read)
        pass
    finally:
        with contextlib.suppress(OSError):
            sock.settimeout(timeout)
    return b"".join(parts) if len(parts) > 1 else first


def finish_body(reads: Iterator[bytes], limit: int, wait_s: float) -> None:
    """Read what is left of a body we are done with (an SSE stream's end after ``[DONE]``: its last chunk), at
    most ``limit`` bytes within ``wait_s`` in all: a body read to its end puts the connection back in the pool
    for the next request; one left unread closes it when the response closes. ``reads``: the body's
    ``body_chunks``, partly read already."""
    size = 0
    deadline = time.monotonic() + wait_s
    with contextlib.suppress(requests.RequestException, urllib3.exceptions.HTTPError, OSError, StreamError):
        for chunk in reads:
            size += len(chunk)
            if size > limit or time.monotonic() > deadline:
                return


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
