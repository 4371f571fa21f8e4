"""The registry proxy's cost (issue 35, ADR 0082): a request through it against the same request direct, on loopback,
and what its start adds to the first command that needs it."""

from __future__ import annotations

import functools
import http.server
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import Figure
from dashfloat.executor._proxy import PROXY_HOSTS_ENV, ProxySupervisor
from dashfloat.executor._sandbox import PROXY_PORT

_NAME = "registry.bench"
_BODY_BYTES = 16 * 1024
"""A small registry answer (an index page): the figure is the hop's latency, not throughput."""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _get(sock: socket.socket, request: bytes) -> int:
    """Send one request, read the answer until the server closes; its size."""
    sock.sendall(request)
    got = 0
    while chunk := sock.recv(65536):
        got += len(chunk)
    sock.close()
    return got


def _direct(port: int) -> float:
    start = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", port))
    _get(sock, b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    return (time.perf_counter() - start) * 1000


def _proxied(path: str, port: int) -> float:
    start = time.perf_counter()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    request = f"GET http://{_NAME}:{port}/index.html HTTP/1.1\r\nHost: {_NAME}\r\nConnection: close\r\n\r\n"
    _get(sock, request.encode())
    return (time.perf_counter() - start) * 1000


def run(quick: bool) -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "index.html").write_bytes(b"x" * _BODY_BYTES)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=tmp))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
        starts: list[float] = []
        proxied: list[float] = []
        direct: list[float] = []
        try:
            for _ in range(3 if quick else 10):  # the cold start: what the first proxied command waits for
                supervisor = ProxySupervisor([_NAME], [], {PROXY_HOSTS_ENV: f"{_NAME}=127.0.0.1"}, PROXY_PORT)
                start = time.perf_counter()
                supervisor.socket_path()
                starts.append((time.perf_counter() - start) * 1000)
                supervisor.stop()
            supervisor = ProxySupervisor([_NAME], [], {PROXY_HOSTS_ENV: f"{_NAME}=127.0.0.1"}, PROXY_PORT)
            path = supervisor.socket_path()
            try:
                for _ in range(30 if quick else 300):  # interleaved, so load drifts hit both alike
                    proxied.append(_proxied(path, port))
                    direct.append(_direct(port))
                rss = _rss_mib(supervisor.process.pid) if supervisor.process is not None else 0.0
            finally:
                supervisor.stop()
        finally:
            server.shutdown()
            server.server_close()
    added = statistics.median(proxied) - statistics.median(direct)
    return [
        Figure(
            name=f"a {_BODY_BYTES // 1024} KiB GET through the registry proxy (its own process), on loopback",
            unit="ms",
            samples=proxied,
            baseline_name="the same GET direct",
            baseline_samples=direct,
            target="≤ 5 ms added at the median",
            met=added <= 5,
            note=f"median added by the proxy: {added:.2f} ms; the proxy's RSS after the run: {rss:.1f} MiB",
        ),
        Figure(
            name="the registry proxy's start (the first proxied command waits for it once per session)",
            unit="ms",
            samples=starts,
            target="≤ 300 ms",
            met=statistics.median(starts) <= 300,
        ),
    ]


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


if __name__ == "__main__":
    for figure in run(quick="--quick" in sys.argv):
        print(f"{figure.name}: median {figure.median():.2f} {figure.unit}, ratio {figure.ratio()}; {figure.note}")
