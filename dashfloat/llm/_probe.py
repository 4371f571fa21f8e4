"""Window discovery's GETs to a local plain-HTTP server through http.client (the plain route, ADR 0048).

A local server over plain HTTP needs nothing ``requests`` adds, as long as the environment gives it nothing to
add: no proxy variable (``requests`` would route through it) and no netrc file (``requests`` would send its
credentials): ``_route.plain_probes``. Then the probes, and the chat requests after them, go through http.client on
the process's kept connections (``_plain``), and the process never imports ``requests``. Anything else (a hosted
API, TLS, a proxy) is asked through ``requests``, whose kept-alive connection the chat request then reuses.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
from typing import Final
from urllib.parse import urljoin, urlsplit

import msgspec

from dashfloat.jsonvalue import JsonValue
from dashfloat.llm._limits import MAX_REDIRECTS

PROBE_BODY_MAX_BYTES: Final = 4 * 1024 * 1024
"""The most of a discovery answer that is read and decoded (a model list with many entries is well below)."""
REDIRECT_STATUSES: Final = (301, 302, 303, 307, 308)
"""Answers whose Location a probe follows (GET only, within the server's origin, at most MAX_REDIRECTS)."""


def follow(url: str, method: str, status: int, location: str | None) -> str | None:
    """Where a probe's answer sends it next: a GET's redirect within the probed server (as the chat request, a
    redirect to another origin is not followed: it would get the provider's headers), else None."""
    if status not in REDIRECT_STATUSES or not location or method != "GET":
        return None
    target = urljoin(url, location)
    return target if urlsplit(target)[:2] == urlsplit(url)[:2] else None


class PlainProber:
    """A discovery's probes through the plain route's connections (``_plain.PLAIN``: kept alive between them and
    for the chat request that follows, replaced when the server closed one); ``get`` has the contract of the
    ``requests`` getter: the JSON body of a 200, else None."""

    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._aborted = False
        self._socket: socket.socket | None = None
        """The socket of the request being answered (http.client lets go of it while a closing answer is read)."""

    def get(self, method: str, url: str, headers: dict[str, str], json: JsonValue = None) -> JsonValue:
        if self._aborted:
            return None
        try:
            return self._ask(method, url, headers, json)
        except (OSError, http.client.HTTPException, msgspec.DecodeError, ValueError):
            return None  # the connection was closed with its answer: not reused for the next probe

    def _on_socket(self, sock: socket.socket) -> None:
        self._socket = sock
        if self._aborted:  # the deadline came while this connected
            _shutdown(sock)

    def _ask(self, method: str, url: str, headers: dict[str, str], json: JsonValue) -> JsonValue:
        # Lazy: the serve loop imports this module as it starts; a process on the requests route never needs _plain.
        from dashfloat.llm._plain import PLAIN

        body = None if json is None else msgspec.json.encode(json)
        sent = {**headers, "Content-Type": "application/json"} if body is not None else headers
        for _ in range(MAX_REDIRECTS + 1):
            response = PLAIN.request(method, url, sent, body, self._timeout_s, self._timeout_s, self._on_socket)
            try:
                data = bytearray()  # read to its end, a refusal's too: the connection is then kept
                for read in response.reads():
                    data += read
                    if len(data) > PROBE_BODY_MAX_BYTES:
                        return None  # over the cap: not read further (closing drops the connection)
            finally:
                response.close()
            next_url = follow(url, method, response.status, response.header("Location"))
            if next_url is not None:
                url = next_url
                continue
            if response.status != 200:
                return None
            decoded: JsonValue = msgspec.json.decode(data)
            return decoded
        return None

    def abort(self) -> None:
        """From another thread (the discovery's deadline): end a read blocked on the server, and ask nothing more."""
        self._aborted = True
        sock = self._socket
        if sock is not None:
            _shutdown(sock)

    def close(self) -> None:
        """Nothing to release: the connections belong to the process's plain route."""


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
