"""The requests route (ADR 0048): one requests Session per process, whose sockets the serve loop can shut down from
another thread. Everything but a local plain-HTTP server goes this way (TLS, hosted APIs, proxies, netrc).

The Session's pool keeps each provider connection alive across streams (no new TCP + TLS handshake per
episode); a stream that takes a kept-alive connection reports its socket just as one that connects does, so an
abort still cuts it.
"""

from __future__ import annotations

# First, before requests: its import without the modules this process never uses (_imports, ADR 0046).
from dashfloat._startup import requests_import  # noqa: F401

# isort: split

import http.client
import os
import socket
import ssl
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import requests
import requests.adapters
import urllib3
import urllib3.connection
import urllib3.exceptions

from dashfloat.llm._errors import StreamError
from dashfloat.llm._limits import READ_CHUNK_BYTES
from dashfloat.llm._transport import OnSocket, chunked_reads, with_records_waiting

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


def body_chunks(response: requests.Response) -> Iterator[bytes]:
    """The body's data as it arrives (``Response.reads``): each socket read gives what it carried (``b""`` for a
    read of framing only).

    A chunked body is decoded by ``chunked_reads`` from the socket's buffered reader, which http.client reads its
    body from too. A read failure goes through urllib3's own error handling (same exceptions, the connection
    dropped); at the body's end http.client's response is closed as it closes it itself, and urllib3 then returns
    the connection to the pool.
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
    reads = chunked_reads(source.read1, tls)
    while True:
        try:
            read = next(reads, None)
        except StreamError:
            raise  # broken framing, after the data before it
        except Exception:
            with catcher():
                raise
        if read is None:
            break
        yield read
    fp.close()  # what http.client does after the last chunk: the socket stays open for the next request
    raw.read1(READ_CHUNK_BYTES)  # b"": urllib3 sees the end and releases the connection


class _RequestsResponse:
    """A requests Response as the stream reads it (``_transport.Response``)."""

    def __init__(self, response: requests.Response) -> None:
        self.response = response

    @property
    def status(self) -> int:
        return self.response.status_code

    def header(self, name: str) -> str | None:
        return self.response.headers.get(name)

    def reads(self) -> Iterator[bytes]:
        return body_chunks(self.response)

    def close(self) -> None:
        self.response.close()


class RequestsTransport:
    """Requests through this process's Session (``_transport.Transport``)."""

    errors: tuple[type[BaseException], ...] = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        connect_s: float,
        read_s: float,
        on_socket: OnSocket,
    ) -> _RequestsResponse:
        response = process_session(on_socket).request(
            method,
            url,
            data=body,
            headers=dict(headers),
            stream=True,
            timeout=(connect_s, read_s),
            allow_redirects=False,
        )
        return _RequestsResponse(response)


REQUESTS: Final = RequestsTransport()
