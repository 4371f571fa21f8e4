"""The allowlisting proxy: one process outside the sandbox, serving HTTP proxy requests on a unix socket.

``CONNECT host:port`` opens a tunnel (TLS stays end to end: nothing is intercepted) and ``GET http://host/…`` is
forwarded with ``Connection: close``, for a host name the allowlist holds; an address, a denied or an unlisted name is
refused with 403 and the reason in the status line and the body, so the command's own error says it. Each refusal is
also written as one JSON line to stdout, where the executor reads what the sandbox refused a command.

Bounds: ``PROXY_MAX_CONNECTIONS`` at once (one more gets 503), a request head of at most ``HEAD_MAX_BYTES``, a relay of
``RELAY_CHUNK_BYTES`` per direction, a thread stack of ``THREAD_STACK_BYTES``: at most ~24 MiB, whatever flows.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Final

from dashfloat.netproxy._forward import THREAD_STACK_BYTES, relay
from dashfloat.sandbox_access import host_allowed

PROXY_MAX_CONNECTIONS: Final = 64
"""Connections served at once; the next one is answered 503 at once (memory stays bounded: module docstring)."""
HEAD_MAX_BYTES: Final = 16 * 1024
"""The longest request head read (request line, headers and the blank line); a longer one is answered 431."""
HEAD_TIMEOUT_S: Final = 30.0
"""How long a client may take to send its request head."""
CONNECT_TIMEOUT_S: Final = 15.0
"""How long reaching the registry may take."""
READY_LINE: Final = b"ready\n"
"""What the proxy writes to stdout once it listens (the executor waits for it)."""

_REASONS: Final = {403: "Forbidden", 400: "Bad Request", 431: "Request Header Fields Too Large", 502: "Bad Gateway"}
_HOP_HEADERS: Final = frozenset({b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"})


class Refused(Exception):
    """A request the proxy does not forward: ``status`` and the reason the response carries."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class ProxyConfig:
    """What one proxy serves: its socket, the allowlist, and the names it resolves itself (tests, a private registry;
    a name mapped here may be a loopback address)."""

    def __init__(
        self, socket_path: str, allow: Sequence[str], deny: Sequence[str] = (), hosts: Mapping[str, str] | None = None
    ) -> None:
        self.socket_path = socket_path
        self.allow = list(allow)
        self.deny = list(deny)
        self.hosts = dict(hosts or {})


def split_target(target: str, default_port: int) -> tuple[str, int]:
    """``host[:port]`` (``[v6]:port`` too) as a pair; Refused 400 when it does not parse."""
    host, port = target, str(default_port)
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        if rest:
            port = rest.removeprefix(":")
    elif target.count(":") == 1:
        host, _, port = target.partition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise Refused(400, f"{target!r} is not host:port")
    return host.lower(), int(port)


def parse_head(head: bytes) -> tuple[str, str, int, bytes]:
    """The method, host, port and the head to send upstream (empty for a CONNECT) of one request head."""
    lines = head.split(b"\r\n")
    try:
        method, target, version = lines[0].decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "the request line is not METHOD TARGET VERSION") from None
    if method == "CONNECT":
        host, port = split_target(target, 443)
        return method, host, port, b""
    if not target.startswith("http://"):
        raise Refused(400, f"{method} {target}: only CONNECT and http:// URLs go through this proxy")
    authority, slash, path = target.removeprefix("http://").partition("/")
    host, port = split_target(authority.rpartition("@")[2], 80)
    kept = [line for line in lines[1:] if line and line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
    upstream = [f"{method} /{path if slash else ''} {version}".encode("ascii"), *kept, b"Connection: close", b"", b""]
    return method, host, port, b"\r\n".join(upstream)


class Proxy:
    """The serving proxy (``serve`` runs it on the calling thread)."""

    def __init__(
        self, config: ProxyConfig, events: int | None = None, max_connections: int = PROXY_MAX_CONNECTIONS
    ) -> None:
        self.config = config
        self.max_connections = max_connections
        self._events = events
        self._events_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_connections)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(config.socket_path)
        self.listener.bind(config.socket_path)
        self.listener.listen(max_connections)

    def serve(self) -> None:
        """Accept for ever; each connection on a thread of its own, within the bound."""
        threading.stack_size(THREAD_STACK_BYTES)
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                if self.listener.fileno() == -1:
                    return  # closed: the proxy's owner stops it (a test's thread; the process is killed)
                continue  # a client gone before it was accepted (ECONNABORTED), out of descriptors for a moment
            if not self._slots.acquire(blocking=False):
                busy = f"the sandbox's proxy serves {self.max_connections} connections at once; retry"
                with contextlib.suppress(OSError):
                    client.settimeout(1.0)
                    client.sendall(_response(503, busy, "Service Unavailable"))
                client.close()
                continue
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        try:
            head, rest = _read_head(client)
            method, host, port, upstream_head = parse_head(head)
            why = host_allowed(host, self.config.allow, self.config.deny)
            if why:
                raise Refused(403, why)
            upstream = self._connect(host, port)
        except Refused as refused:
            self._refused(client, refused)
            return
        except OSError:
            client.close()
            self._slots.release()
            return
        try:
            client.settimeout(None)
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.sendall(upstream_head)
            if rest:
                upstream.sendall(rest)
        except OSError:
            upstream.close()
            client.close()
            self._slots.release()
            return
        try:
            relay(client, upstream)
        finally:
            self._slots.release()

    def _connect(self, host: str, port: int) -> socket.socket:
        """A connection to ``host``, through the configured map or DNS; a name DNS puts on loopback is refused (the
        host's own services are not a registry)."""
        mapped = self.config.hosts.get(host)
        try:
            infos = socket.getaddrinfo(mapped or host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise Refused(502, f"{host} could not be resolved: {exc}") from None
        last = f"{host}:{port} could not be reached"
        for family, kind, proto, _, address in infos:
            if mapped is None and ipaddress.ip_address(str(address[0]).partition("%")[0]).is_loopback:
                raise Refused(403, f"{host} resolves to a loopback address: the host's own services are refused")
            sock = socket.socket(family, kind, proto)
            sock.settimeout(CONNECT_TIMEOUT_S)
            try:
                sock.connect(address)
            except OSError as exc:
                sock.close()
                last = f"{host}:{port} could not be reached: {exc}"
                continue
            sock.settimeout(None)
            return sock
        raise Refused(502, last)

    def _refused(self, client: socket.socket, refused: Refused) -> None:
        try:
            with contextlib.suppress(OSError):
                client.sendall(_response(refused.status, refused.reason))
            client.close()
            self._event({"status": refused.status, "why": refused.reason})
        finally:
            self._slots.release()

    def _event(self, event: dict[str, object]) -> None:
        """One line to the executor; dropped when its pipe is full (it reads them after each command)."""
        if self._events is None:
            return
        with self._events_lock, contextlib.suppress(OSError):
            os.write(self._events, json.dumps(event).encode() + b"\n")


def _read_head(client: socket.socket) -> tuple[bytes, bytes]:
    """The request head and whatever came after it."""
    client.settimeout(HEAD_TIMEOUT_S)
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_MAX_BYTES:
            raise Refused(431, f"a request head longer than {HEAD_MAX_BYTES} bytes")
        try:
            chunk = client.recv(HEAD_MAX_BYTES)
        except OSError:
            raise Refused(400, "the request head did not arrive") from None
        if not chunk:
            raise Refused(400, "the connection closed before the request head ended")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    if len(head) + len(b"\r\n\r\n") > HEAD_MAX_BYTES:
        raise Refused(431, f"a request head longer than {HEAD_MAX_BYTES} bytes")
    return head, rest


def _response(status: int, reason: str, phrase: str = "") -> bytes:
    """A refusal: the reason in the status line (what most clients print) and in the body (what curl -v shows)."""
    body = f"DashFloat sandbox: refused: {reason}\n".encode()
    line = f"HTTP/1.1 {status} {phrase or _REASONS.get(status, 'Refused')} ({reason})".replace("\r", " ")
    headers = f"{line}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return headers.encode("utf-8", "replace") + body


def main(argv: Sequence[str]) -> None:
    """``python -m dashfloat.netproxy CONFIG_JSON``: serve until killed; ``ready`` on stdout once listening, then one
    JSON line per refusal. ``CONFIG_JSON``: socket, allow, deny, hosts, parent (the pid that must be our parent)."""
    config = json.loads(argv[0])
    # Killed with the executor that started us, also by SIGKILL; if it is gone already, we go now.
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != config["parent"]:
        sys.exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the session; the executor stops us
    try:
        proxy = Proxy(
            ProxyConfig(config["socket"], config["allow"], config["deny"], config["hosts"]), sys.stdout.fileno()
        )
    except OSError as exc:
        sys.stderr.write(f"cannot listen on {config['socket']}: {exc}\n")
        sys.exit(1)
    os.set_blocking(sys.stdout.fileno(), False)
    os.write(sys.stdout.fileno(), READY_LINE)
    # From here nobody reads stderr: a thread's traceback must not fill its pipe and stop that thread.
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    os.close(null)
    proxy.serve()
