"""Inside one sandboxed command: 127.0.0.1:PORT forwarded to the proxy's unix socket, then the command exec'd.

Run as a script (``python -I -S _forward.py SOCKET PORT ARGV...``, no DashFloat import: it starts in ~10 ms): it
listens first, so the port is open before the command's first byte runs, then forks. The child forwards; the parent
execs ``ARGV`` (the command keeps its pid, so bwrap's exit status is the command's). The child dies with the
sandbox's PID namespace when the command ends. ``relay`` is shared with the proxy (ADR 0082).
"""

from __future__ import annotations

import os
import select
import socket
import sys
import threading

FORWARD_MAX_CONNECTIONS = 64
"""Connections forwarded at once; one more waits in the listen queue until one ends."""
RELAY_CHUNK_BYTES = 64 * 1024
"""The most one relay holds per direction: a connection's memory is bounded by this, whatever flows."""
RELAY_IDLE_TIMEOUT_S = 300.0
"""A connection on which nothing moves for this long is closed."""
SESSION_FLAG = "--session"
"""Before the executor's pid: serve the session's namespace for the executor's life instead of running a command."""
THREAD_STACK_BYTES = 256 * 1024
"""Each connection's thread stack (the default 8 MiB is address space a relay never uses)."""


def relay(one: socket.socket, other: socket.socket, idle_s: float = RELAY_IDLE_TIMEOUT_S) -> None:
    """Copy bytes both ways until both sides have closed (a half-close is passed on) or nothing moves for
    ``idle_s``; both sockets are closed at the end."""
    poller = select.poll()
    peers = {one.fileno(): (one, other), other.fileno(): (other, one)}
    open_reads = set(peers)
    for fd in open_reads:
        poller.register(fd, select.POLLIN)
    try:
        while open_reads:
            ready = poller.poll(idle_s * 1000)
            if not ready:
                return
            for fd, _ in ready:
                source, sink = peers[fd]
                try:
                    chunk = source.recv(RELAY_CHUNK_BYTES)
                except OSError:
                    chunk = b""
                if chunk:
                    try:
                        sink.sendall(chunk)
                    except OSError:
                        return
                    continue
                poller.unregister(fd)
                open_reads.discard(fd)
                try:
                    sink.shutdown(socket.SHUT_WR)
                except OSError:
                    return
    finally:
        one.close()
        other.close()


def _forward(client: socket.socket, path: str, slots: threading.Semaphore) -> None:
    try:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            upstream.close()
            client.close()
            return
        relay(client, upstream)
    finally:
        slots.release()


def serve(listener: socket.socket, path: str) -> None:
    """Accept on ``listener`` for ever, each connection relayed to the unix socket ``path`` on a thread of its own."""
    threading.stack_size(THREAD_STACK_BYTES)
    slots = threading.Semaphore(FORWARD_MAX_CONNECTIONS)
    while True:
        slots.acquire()
        client, _ = listener.accept()
        threading.Thread(target=_forward, args=(client, path, slots), daemon=True).start()


def _quiet() -> None:
    """Standard streams on /dev/null: a pipe held here would keep its reader waiting after the command ended."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def main(argv: list[str]) -> None:
    """``SOCKET PORT ARGV...``: listen on 127.0.0.1:PORT, fork the forwarder, exec ARGV. Without ARGV (the session's
    one forwarder, in the session's network namespace; ``SOCKET PORT --session PARENT``): listen, say ``ready`` on
    stdout, forward until PARENT (the executor) dies."""
    path, port, command = argv[0], int(argv[1]), argv[2:]
    if command[:1] == [SESSION_FLAG]:
        import ctypes
        import signal

        # Killed with the executor that started us, SIGKILL included; if it is gone already, we go now.
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != int(command[1]):
            sys.exit(1)
        command = []
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(FORWARD_MAX_CONNECTIONS)
    except OSError as exc:
        if not command:
            sys.stderr.write(f"cannot listen on 127.0.0.1:{port}: {exc}\n")
            sys.exit(1)
        # The command still runs, without the registries: its output says why.
        sys.stderr.write(f"[sandbox: the registry proxy's port 127.0.0.1:{port} could not be opened: {exc}]\n")
        listener.close()
    else:
        if not command:
            os.write(1, b"ready\n")
            _quiet()
            serve(listener, path)
        if os.fork() == 0:
            _quiet()
            try:
                serve(listener, path)
            finally:
                os._exit(0)
        listener.close()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
