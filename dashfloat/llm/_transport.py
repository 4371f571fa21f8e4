"""What a stream asks of an HTTP transport, and the parts both transports share (standard library only).

Two transports carry the chat stream (ADR 0048): ``_plain`` on http.client, for a local plain-HTTP server when the
environment gives ``requests`` nothing to add, and ``_http`` on requests and urllib3 for everything else (TLS,
hosted APIs, proxies, netrc). Both import this module; it imports neither, and which one a request takes is
``_route``'s choice (docs/decisions/0071). A stream sees only ``Transport`` and ``Response``; the body's decoding
(chunked framing, TLS records waiting), its bounded reads and the failure taxonomy (``_errors``) are the same code
for both.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from dashfloat.llm._chunked import ChunkedBody
from dashfloat.llm._errors import StreamError
from dashfloat.llm._limits import READ_CHUNK_BYTES

OnSocket = Callable[[socket.socket], None]


class Response(Protocol):
    """An answer whose status and headers have arrived; its body is read through ``reads``."""

    @property
    def status(self) -> int: ...

    def header(self, name: str) -> str | None:
        """A response header (case-insensitive), None when absent."""
        ...

    def reads(self) -> Iterator[bytes]:
        """The body's data as it arrives, one item per socket read (``b""`` for a read of framing only, so that a
        caller can watch its deadline on every read). Called once."""
        ...

    def close(self) -> None:
        """Done with it: a body read to its end leaves the connection for the next request, any other closes it."""
        ...


class Transport(Protocol):
    """Sends one request at a time per call; safe to call from several threads (each gets its own connection)."""

    errors: tuple[type[BaseException], ...]
    """What sending or reading may raise besides StreamError (``_errors.classify_request_error`` reads them)."""

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        connect_s: float,
        read_s: float,
        on_socket: OnSocket,
    ) -> Response:
        """Send the request (header block and body in one write), wait for the status and headers (``read_s``:
        each read's timeout; ``connect_s``: a new connection's). Redirects are not followed. Every socket the
        request uses (new or kept) goes to ``on_socket`` before it is read, so that another thread can cut it."""
        ...


def shutdown(sock: socket.socket) -> None:
    """Unblock a reader in another thread and tell the server we are gone (FIN)."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def chunked_reads(read1: Callable[[int], bytes], tls: ssl.SSLSocket | None) -> Iterator[bytes]:
    """A chunked body (every SSE stream), decoded here from the buffered reader http.client reads its body from
    too: one read of many chunks costs one pass (``ChunkedBody``), where http.client's ``read1`` takes a call per
    chunk and a paced provider sends a chunk per token. Over TLS a read takes the records already waiting
    (``with_records_waiting``). A connection closed before the last chunk raises ``http.client.IncompleteRead``,
    broken framing StreamError "malformed_frame" (after the data before it)."""
    body = ChunkedBody()
    while not body.done:
        read = read1(READ_CHUNK_BYTES)
        if not read:
            raise http.client.IncompleteRead(b"")  # closed before the last chunk, as http.client says it
        if tls is not None and len(read) < READ_CHUNK_BYTES:
            read = with_records_waiting(read1, tls, read)
        yield body.feed(read)
        if body.error is not None:
            raise body.error  # after the data before it


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


def finish_body(reads: Iterator[bytes], limit: int, wait_s: float, errors: tuple[type[BaseException], ...]) -> None:
    """Read what is left of a body we are done with (an SSE stream's end after ``[DONE]``: its last chunk), at
    most ``limit`` bytes within ``wait_s`` in all: a body read to its end leaves the connection for the next
    request; one left unread closes it when the response closes. ``reads``: the response's ``reads()``, partly
    read already; ``errors``: its transport's."""
    size = 0
    deadline = time.monotonic() + wait_s
    with contextlib.suppress(*errors, OSError, StreamError):
        for chunk in reads:
            size += len(chunk)
            if size > limit or time.monotonic() > deadline:
                return


def read_bounded(response: Response, limit: int, errors: tuple[type[BaseException], ...]) -> bytes:
    """At most ``limit`` bytes of an error body (a hostile body cannot grow memory)."""
    parts: list[bytes] = []
    size = 0
    with contextlib.suppress(*errors, OSError):
        for chunk in response.reads():
            parts.append(chunk)
            size += len(chunk)
            if size >= limit:
                break
    return b"".join(parts)[:limit]
