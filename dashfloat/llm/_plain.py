"""The plain route (ADR 0048): requests to a local plain-HTTP server on the standard library's http.client.

Used only where requests would add nothing (``_route.plain_route``: ``http://`` to a local host, no proxy
variable, no netrc file). The LLM process then never imports requests and urllib3 (~40 ms of CPU on the first
request's path, ~5 MB of the worker's memory). What it keeps from urllib3's pool: connections kept alive per
server across requests (several when streams overlap), one that the server has closed meanwhile is replaced
before use, and one that fails while the request goes out (the server had closed it) is retried once on a new
connection; a request sent whole that gets no answer is not sent again here (the stream decides, as it does for
requests' same error). What it does not do: TLS, proxies, netrc credentials, following redirects (the stream
decides them), decompressing (the stream decodes the body itself, as on the requests route).
"""

from __future__ import annotations

import http.client
import os
import select
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Final
from urllib.parse import urlsplit

from dashfloat import __version__
from dashfloat.llm._errors import ConnectTimedOut
from dashfloat.llm._limits import READ_CHUNK_BYTES
from dashfloat.llm._transport import OnSocket, chunked_reads

USER_AGENT: Final = f"dashfloat/{__version__}"
"""Sent on the plain route (probes and chat) unless the provider's headers name one."""
IDLE_CONNECTIONS_MAX: Final = 4
"""Kept-alive connections kept per server (streams at once: the main one and a summary); more are closed."""
IDLE_SERVERS_MAX: Final = 4
"""Servers whose connections are kept (the provider, its window probes' host, a provider switched to with /model and
back); giving one back to another server closes those of the server least recently used. Without it, a long
session switching among many servers kept a socket open to each for the process's life."""


def _create_connection(
    address: tuple[str, int], timeout: float | None, source_address: tuple[str, int] | None
) -> socket.socket:
    """``socket.create_connection`` with an ASCII host name given as bytes: with a ``str``, ``getaddrinfo`` encodes it
    through the ``idna`` codec, whose first use imports ``encodings.idna``, ``stringprep`` and ``unicodedata``
    (~1 MB of the LLM worker's memory, ADR 0053). An ASCII name is the same bytes either way."""
    host, port = address
    named: str | bytes = host.encode("ascii") if host.isascii() else host
    return socket.create_connection((named, port), timeout, source_address)  # type: ignore[arg-type]


class _Connection(http.client.HTTPConnection):
    """http.client's connection that tells a connect's timeout from a read's and sends a request in one write."""

    _parts: list[bytes] | None = None

    def connect(self) -> None:
        # http.client connects through this attribute (set in its __init__); where a version does not, the host goes
        # as a str, as before
        self._create_connection = _create_connection
        try:
            super().connect()  # with TCP_NODELAY, as urllib3's
        except TimeoutError as exc:
            raise ConnectTimedOut(f"connecting to {self.host}:{self.port} timed out") from exc

    def send(self, data: object) -> None:
        if self._parts is not None and isinstance(data, bytes):
            self._parts.append(data)  # the header block, then the body: one write below
            return
        super().send(data)  # type: ignore[arg-type]

    def send_request(self, method: str, target: str, body: bytes | None, headers: Mapping[str, str]) -> None:
        """The request line, the headers and the body in one ``sendall`` (one packet for a small request: the
        server reads it at once, ADR 0043)."""
        self._parts = []
        try:
            self.request(method, target, body=body, headers=dict(headers))
            parts = self._parts
        finally:
            self._parts = None
        if self.sock is None:
            raise http.client.NotConnected()
        self.sock.sendall(b"".join(parts))


def _dropped(connection: _Connection) -> bool:
    """A kept connection the server closed (or sent something on) while it was idle: not to be used again."""
    sock = connection.sock
    if sock is None:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class _PlainResponse:
    """An http.client answer as the stream reads it (``_transport.Response``)."""

    def __init__(
        self, pool: PlainTransport, key: tuple[str, int], connection: _Connection, answer: http.client.HTTPResponse
    ) -> None:
        self._pool = pool
        self._key = key
        self._connection = connection
        self._answer = answer
        self._complete = False
        self._closed = False

    @property
    def status(self) -> int:
        return self._answer.status

    def header(self, name: str) -> str | None:
        return self._answer.getheader(name)

    def reads(self) -> Iterator[bytes]:
        answer = self._answer
        if answer.chunked and answer.chunk_left is None and answer.fp is not None:
            yield from chunked_reads(answer.fp.read1, None)
        else:
            while chunk := answer.read1(READ_CHUNK_BYTES):
                yield chunk
            if answer.length:  # a Content-Length body cut short
                raise http.client.IncompleteRead(b"", answer.length)
        self._complete = True

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        answer, connection = self._answer, self._connection
        keep = self._complete and not answer.will_close
        answer.close()  # the socket stays open: the connection holds it
        if keep:
            self._pool.give_back(self._key, connection)
        else:
            connection.close()


class PlainTransport:
    """Requests through http.client with kept-alive connections (``_transport.Transport``); one pool per process:
    a connection never crosses a fork."""

    errors: tuple[type[BaseException], ...] = (http.client.HTTPException, OSError)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._pid = os.getpid()

    def _forked(self) -> None:
        """In a forked child, forget the parent's connections (not closed: the parent still uses them). Under the
        lock."""
        if self._pid != os.getpid():
            self._idle, self._pid = {}, os.getpid()

    def _take(self, key: tuple[str, int]) -> _Connection | None:
        with self._lock:
            self._forked()
            kept = self._idle.get(key, [])
            found = None
            while kept and found is None:
                connection = kept.pop()
                if _dropped(connection):
                    connection.close()
                else:
                    found = connection
            if not kept:
                self._idle.pop(key, None)  # a server with nothing kept does not count against IDLE_SERVERS_MAX
        return found

    def give_back(self, key: tuple[str, int], connection: _Connection) -> None:
        closing = [connection]
        with self._lock:
            self._forked()
            kept = self._idle.pop(key, [])
            self._idle[key] = kept  # the most recently used server last
            if len(kept) < IDLE_CONNECTIONS_MAX:
                kept.append(connection)
                closing = []
            while len(self._idle) > IDLE_SERVERS_MAX:
                closing += self._idle.pop(next(iter(self._idle)))
        for each in closing:
            each.close()

    def close_idle(self) -> None:
        """Close the connections kept for the next request."""
        with self._lock:
            self._forked()
            idle, self._idle = self._idle, {}
        for kept in idle.values():
            for connection in kept:
                connection.close()

    def idle_connections(self) -> int:
        """Connections kept for the next request (all servers)."""
        with self._lock:
            self._forked()
            return sum(len(kept) for kept in self._idle.values())

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        connect_s: float,
        read_s: float,
        on_socket: OnSocket,
    ) -> _PlainResponse:
        parts = urlsplit(url)
        key = (parts.hostname or "", parts.port or 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        sent = dict(headers)
        if not any(name.lower() == "user-agent" for name in sent):
            sent["User-Agent"] = USER_AGENT
        connection = self._take(key)
        while True:
            reused = connection is not None
            if connection is None:
                connection = _Connection(key[0], key[1], timeout=connect_s)
                try:
                    connection.connect()
                except BaseException:
                    connection.close()
                    raise
            sock = connection.sock
            if sock is not None:
                on_socket(sock)
                sock.settimeout(read_s)
            try:
                connection.send_request(method, target, body, sent)
            except ConnectionError:
                # A kept connection the server had closed (its idle timeout met as we sent): the request did not
                # go out whole, so once more on a new connection.
                connection.close()
                if not reused:
                    raise
                connection = None
                continue
            except BaseException:
                connection.close()
                raise
            try:
                answer = connection.getresponse()
            except BaseException:
                # Sent whole, then no answer: the server may have taken the request (a model may be running it),
                # so it is not sent again here; the stream decides, as it does for requests' same error.
                connection.close()
                raise
            return _PlainResponse(self, key, connection, answer)


PLAIN: Final = PlainTransport()
