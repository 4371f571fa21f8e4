"""A hostile server's discovery answers are bounded: a body that never ends is not read past the probe cap through
either route, and a server that drips (a byte within each read timeout, forever) is answered for at
DISCOVERY_DEADLINE_S, so the agent's first request still goes out."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
import requests

from dashfloat._startup.preload import Preload
from dashfloat.llm import _window as w
from dashfloat.llm._discover import PROBE_BODY_MAX_BYTES, Discovery, requests_get
from dashfloat.protocol import DiscoverWindow, ProviderConfig, WindowFound
from dashfloat.testing.sse_server import ScriptedServer, redirect_reply

BIG_BODY_BYTES = 16 * PROBE_BODY_MAX_BYTES
"""Far more than the cap and any socket buffers between the two ends: a client that reads it all is seen."""


class RawServer:
    """One-mode raw HTTP server on 127.0.0.1: ``big`` answers a 200 with BIG_BODY_BYTES of spaces, ``drip`` a 200
    whose body is one space at a time, each after the client's last read, forever (until it goes away)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sent = 0
        self.gone = threading.Event()
        """A connection's client went away (the server's write failed or it closed)."""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            length = f"Content-Length: {BIG_BODY_BYTES}\r\n" if self.mode == "big" else ""
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{length}\r\n".encode())
            if self.mode == "big":
                piece = b" " * 65536
                while self.sent < BIG_BODY_BYTES:
                    conn.sendall(piece)
                    self.sent += len(piece)
            else:
                conn.settimeout(0.05)  # a byte, then wait for the client to go (never for it to read: it does not)
                while not self._stop.is_set():
                    conn.sendall(b" ")
                    try:
                        if conn.recv(1) == b"":
                            break
                    except TimeoutError:
                        continue
        except OSError:
            pass
        finally:
            conn.close()
            self.gone.set()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()


@pytest.fixture
def big() -> Iterator[RawServer]:
    server = RawServer("big")
    yield server
    server.close()


@pytest.fixture
def drip() -> Iterator[RawServer]:
    server = RawServer("drip")
    yield server
    server.close()


def test_a_huge_answer_through_requests_is_not_read_past_the_cap(big: RawServer) -> None:
    """Through ``requests`` (a hosted API, TLS, a proxy) the answer was read whole, then cut: a server sending
    without end filled the worker's memory (6.6 GB in 40 s, found with a raw server)."""
    with requests.Session() as session:
        assert requests_get(session)("GET", f"{big.base_url}/models", {}, None) is None
    assert big.gone.wait(30)
    assert big.sent < BIG_BODY_BYTES  # the client stopped reading and went: the server could not send it all


def _discover(server: RawServer, stack: Preload | None) -> tuple[threading.Event, list[WindowFound]]:
    answers: list[WindowFound] = []
    replied = threading.Event()

    def done(_ask: DiscoverWindow, found: WindowFound) -> None:
        answers.append(found)
        replied.set()

    provider = ProviderConfig(name="t", base_url=server.base_url, model="local-model")
    Discovery(DiscoverWindow(request_id=3, provider=provider), done, {}, stack).begin()
    return replied, answers


class _StillImporting:
    """The HTTP stack's import, still running (the discovery then asks a local server through http.client)."""

    def done(self) -> bool:
        return False


@pytest.fixture
def short_deadline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """DISCOVERY_DEADLINE_S well under the drip's pace times the probe cap, and an environment without proxies
    or netrc (the http.client route is allowed)."""
    monkeypatch.setattr(w, "DISCOVERY_DEADLINE_S", 0.5)
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "NETRC", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


@pytest.mark.usefixtures("short_deadline")
@pytest.mark.parametrize("route", ["http.client", "requests"])
def test_a_dripping_server_is_answered_for_at_the_deadline(drip: RawServer, route: str) -> None:
    """The read timeout never fires against a server that sends a byte within it: without a deadline for the
    whole discovery, the agent waited for the window, and its first request never went out."""
    stack = cast(Preload, _StillImporting()) if route == "http.client" else None
    replied, answers = _discover(drip, stack)
    assert replied.wait(30)
    [found] = answers
    assert (found.request_id, found.window, found.source) == (3, w.DEFAULT_ASSUMED_WINDOW, "assumed")
    assert found.detail == "no answer in time" and "no answer within 0.5 s" in found.notice
    if route == "http.client":
        assert drip.gone.wait(30)  # the deadline ended the blocked read: the connection is not left dripping


def test_through_requests_a_redirect_to_another_origin_is_not_followed() -> None:
    """As the chat request and the http.client route do: requests followed it, dropping Authorization on the way but
    not the provider's own headers (an ``api-key`` went to the other host)."""
    with ScriptedServer() as server, ScriptedServer() as elsewhere, requests.Session() as session:
        get = requests_get(session)
        server.routes[("GET", "/v1/models")] = redirect_reply("/v1/models/all")
        server.routes[("GET", "/v1/models/all")] = (200, {"data": []})
        assert get("GET", f"{server.base_url}/models", {"api-key": "secret"}, None) == {"data": []}  # same origin
        server.routes[("GET", "/v1/models")] = redirect_reply(f"{elsewhere.base_url}/models")
        elsewhere.routes[("GET", "/v1/models")] = (200, {"data": []})
        assert get("GET", f"{server.base_url}/models", {"api-key": "secret"}, None) is None
        assert elsewhere.other_requests == []
