"""The executor's side of the registry proxy: started at the first command that needs it, stopped with the executor.

The proxy (``dashfloat.netproxy``) is a child of the executor: the executor's exit paths kill every descendant
(``procutil.kill_descendants``), the proxy asks the kernel to kill it when the executor dies (``PR_SET_PDEATHSIG``),
and the main process kills whatever is left at its exit (ADR 0065). Its socket lives in a private directory under the
host's ``/tmp``, which no sandbox sees (each has a private ``/tmp``) unless its bwrap binds the socket in (ADR 0082).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from dashfloat.executor._session_net import SessionNet

PROXY_START_TIMEOUT_S: Final = 10.0
"""How long the proxy may take to listen; a proxy slower than this is taken as one that cannot start."""
PROXY_HOSTS_ENV: Final = "DASHFLOAT_PROXY_HOSTS"
"""``name=address,…``: names the proxy resolves itself instead of asking DNS (tests, a registry on this machine; such a
name may be a loopback address, which DNS's answers may not)."""
PROXY_EVENTS_MAX_BYTES: Final = 64 * 1024
"""The most of the proxy's refusal lines read after one command (its pipe holds no more anyway)."""
SOCKET_NAME: Final = "proxy.sock"


def host_map(env: Mapping[str, str]) -> dict[str, str]:
    """``PROXY_HOSTS_ENV`` as a map (malformed entries skipped)."""
    found: dict[str, str] = {}
    for pair in env.get(PROXY_HOSTS_ENV, "").split(","):
        name, _, address = pair.partition("=")
        if name.strip() and address.strip():
            found[name.strip().lower()] = address.strip()
    return found


class ProxyUnavailable(OSError):
    """The proxy could not start; ``str()`` says why."""


class ProxySupervisor:
    """One proxy for the executor's lifetime, started by ``socket_path`` when first needed."""

    def __init__(
        self, allow: Sequence[str], deny: Sequence[str], env: Mapping[str, str], port: int, python: str = ""
    ) -> None:
        """``port``: where the session's forwarder listens on the session's loopback (``session_forwarder``);
        ``python``: the interpreter that runs the proxy (default: ours)."""
        self.port = port
        self.python = python or sys.executable
        self.forwarder: subprocess.Popen[bytes] | None = None
        self.allow = list(allow)
        self.deny = list(deny)
        self.hosts = host_map(env)
        self.process: subprocess.Popen[bytes] | None = None
        self.failed = ""
        """Why the proxy could not start (then it is not tried again: commands get no network, and say why)."""
        self._dir = ""

    def socket_path(self) -> str:
        """The running proxy's socket, started now if need be; ProxyUnavailable naming why it cannot run."""
        if self.failed:
            raise ProxyUnavailable(self.failed)
        if self.process is not None and self.process.poll() is None:
            return os.path.join(self._dir, SOCKET_NAME)
        self.stop()  # died since (killed by hand, out of memory): a fresh one
        try:
            return self._start()
        except ProxyUnavailable as exc:
            self.failed = str(exc)
            raise

    def _start(self) -> str:
        import json  # only where a proxy starts: the executor's idle path imports neither (issue 19)
        import tempfile

        try:
            self._dir = tempfile.mkdtemp(prefix="dashfloat-proxy-", dir="/tmp")
        except OSError as exc:
            raise ProxyUnavailable(f"the registry proxy cannot start: no private directory in /tmp ({exc})") from exc
        path = os.path.join(self._dir, SOCKET_NAME)
        config = {"socket": path, "allow": self.allow, "deny": self.deny, "hosts": self.hosts, "parent": os.getpid()}
        try:
            process = subprocess.Popen(
                [self.python, "-I", "-m", "dashfloat.netproxy", json.dumps(config)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                close_fds=True,
                start_new_session=True,  # the terminal's Ctrl-C is the session's; the executor stops it
            )
        except OSError as exc:
            raise ProxyUnavailable(f"the registry proxy cannot start: {exc}") from exc
        self.process = process
        assert process.stdout is not None and process.stderr is not None
        ready, _, _ = select.select([process.stdout], [], [], PROXY_START_TIMEOUT_S)
        line = os.read(process.stdout.fileno(), 64) if ready else b""
        if not line.startswith(b"ready"):
            # Readable but no "ready": it exited, and what it said is all in its stderr; else it hangs (killed).
            said = process.stderr.read().decode(errors="replace").strip().splitlines() if ready else []
            code = process.wait() if ready else None
            self.stop()
            exited = f"it exited with status {code}" if code is not None else ""
            why = said[-1] if said else exited or f"it did not listen within {PROXY_START_TIMEOUT_S:g} s"
            raise ProxyUnavailable(f"the registry proxy cannot start: {why}")
        os.set_blocking(process.stdout.fileno(), False)
        return path

    def session_forwarder(self, net: SessionNet) -> None:
        """The session's one forwarder, in its network namespace (ADR 0080): 127.0.0.1:``port`` there reaches the
        proxy; started now if it does not run. ProxyUnavailable naming why it cannot."""
        path = self.socket_path()
        if self.forwarder is not None and self.forwarder.poll() is None:
            return
        self._stop_forwarder()
        from dashfloat.netproxy import forward_source

        argv = [os.path.realpath(sys.executable), "-I", "-S", "-c", forward_source(), path, str(self.port)]
        argv += ["--session", str(os.getpid())]
        try:
            forwarder = net.run_inside(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, close_fds=True,
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            raise ProxyUnavailable(f"the registry proxy's forwarder cannot start: {exc}") from exc
        self.forwarder = forwarder
        assert forwarder.stdout is not None and forwarder.stderr is not None
        ready, _, _ = select.select([forwarder.stdout], [], [], PROXY_START_TIMEOUT_S)
        if not (ready and os.read(forwarder.stdout.fileno(), 64).startswith(b"ready")):
            said = forwarder.stderr.read().decode(errors="replace").strip().splitlines() if ready else []
            self._stop_forwarder()
            why = said[-1] if said else f"it did not listen within {PROXY_START_TIMEOUT_S:g} s"
            raise ProxyUnavailable(f"the registry proxy's forwarder cannot start: {why}")

    def _stop_forwarder(self) -> None:
        forwarder, self.forwarder = self.forwarder, None
        if forwarder is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(forwarder.pid, signal.SIGKILL)
            forwarder.wait()
            for stream in (forwarder.stdout, forwarder.stderr):
                if stream is not None:
                    stream.close()

    def refusals(self) -> list[str]:
        """What the proxy refused since the last call, one reason each (in order, once each)."""
        process = self.process
        if process is None or process.stdout is None:
            return []
        data = b""
        with contextlib.suppress(OSError, TypeError):
            while len(data) < PROXY_EVENTS_MAX_BYTES:
                chunk = os.read(process.stdout.fileno(), PROXY_EVENTS_MAX_BYTES)
                if not chunk:
                    break
                data += chunk
        import json

        found: list[str] = []
        for line in data.splitlines():
            with contextlib.suppress(ValueError, TypeError, KeyError):
                found.append(str(json.loads(line)["why"]))
        return list(dict.fromkeys(found))

    def stop(self) -> None:
        """Kill the proxy and the session's forwarder (by their pids) and remove the socket's directory."""
        self._stop_forwarder()
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        if self._dir:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self._dir, SOCKET_NAME))
            with contextlib.suppress(OSError):
                os.rmdir(self._dir)
            self._dir = ""
