"""One network namespace per session: loopback only, shared by the session's sandboxed commands and jobs (ADR 0080).

A *holder* process (bwrap, ``--unshare-all``, waiting on a pipe) makes the namespace and keeps it for the executor's
life; it dies with the executor (``--die-with-parent``, and the pipe's end-of-file). Every sandboxed command that may
not use the network is then started inside it (bwrap ``--share-net`` from there), so a background job's server on
``127.0.0.1:PORT`` is reachable from the session's later commands, and from nothing else: the host's loopback is
another namespace. Commands approved with the network keep the host's, as before.

Entering it, for a process about to be started:

- **root**: ``setns(2)`` of the spawning thread onto the holder's namespace, the spawn, ``setns`` back
  (``SessionNet.inside``): the child inherits the thread's namespace; nothing is exec'd more.
- **not root**: the namespace belongs to the holder's user namespace, which a multithreaded process cannot enter;
  the child is started through ``nsenter --preserve-credentials`` into the holder's user and network namespaces
  (``SessionNet.argv_prefix``), then execs bwrap there. Untested here (the machines that test run as root).

API for other parts of the executor (the registries proxy's forwarder, issue 35): ``session_net(bwrap)`` is the
executor's one ``SessionNet`` (started at first use; None where it cannot be made), and ``SessionNet.run_inside(argv,
**popen)`` starts one helper process inside it, which then listens on the session's loopback.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from typing import Any, Final

import msgspec

CLONE_NEWNET: Final = 0x40000000
HOLDER_START_TIMEOUT_S: Final = 10.0
"""How long the holder may take to report its namespace; past it the session runs without one (per-command ones)."""
_HOLDER_SCRIPT: Final = "read _ || true"
"""The holder's only work: wait for the executor's end of its stdin pipe to close (the executor exited)."""


class SessionNetError(OSError):
    """The session's namespace could not be made or entered (the message says why)."""


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise SessionNetError(errno, f"setns into the session's network namespace: {os.strerror(errno)}")


class SessionNet:
    """The session's network namespace and the process holding it."""

    def __init__(self, bwrap: str) -> None:
        """Start the holder and wait for its namespace (SessionNetError naming why it could not be made)."""
        self._holder: subprocess.Popen[bytes] | None = None
        self._stdin_w = -1
        self._ns_fd = -1
        self._host_fd = -1
        info_r, info_w = os.pipe()
        stdin_r, self._stdin_w = os.pipe()
        argv = [bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
        argv += ["--info-fd", str(info_w), "--", "/bin/sh", "-c", _HOLDER_SCRIPT]
        try:
            # Its own group: a Ctrl-C at the terminal does not reach it; the executor's end does.
            self._holder = subprocess.Popen(
                argv, stdin=stdin_r, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(info_w,),
                process_group=0,
            )  # fmt: skip
        except OSError as exc:
            os.close(info_r)
            self.close()
            raise SessionNetError(f"cannot start the session's network holder: {exc}") from exc
        finally:
            os.close(info_w)
            os.close(stdin_r)
        info = _read_all(info_r)
        try:
            child = int(msgspec.json.decode(info)["child-pid"])
        except (ValueError, KeyError, TypeError):
            error = self._holder.stderr.read().decode(errors="replace").strip() if self._holder.stderr else ""
            self.close()
            raise SessionNetError(f"the session's network holder did not start: {error or 'no namespace'}") from None
        self.pid = child
        """The holder's process inside the namespace (``/proc/PID/ns/net`` is the namespace)."""
        self.root = os.geteuid() == 0
        try:
            # Held open: the namespace lives as long as this fd, even should the holder be killed.
            self._ns_fd = os.open(f"/proc/{child}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            self._host_fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            self.close()
            raise SessionNetError(f"cannot open the session's network namespace: {exc}") from exc
        self._nsenter = "" if self.root else (shutil.which("nsenter") or "")
        if not self.root and not self._nsenter:
            self.close()
            raise SessionNetError("nsenter is not installed: a non-root executor cannot enter the session's namespace")

    @property
    def holder_pid(self) -> int:
        """The holder's bwrap (outside the namespace), the process the executor started."""
        assert self._holder is not None
        return self._holder.pid

    @contextlib.contextmanager
    def inside(self) -> Iterator[None]:
        """Root only: the calling thread is in the session's namespace for the block (a child started there stays)."""
        if not self.root:
            yield  # argv_prefix does it for the child
            return
        _setns(self._ns_fd)
        try:
            yield
        finally:
            _setns(self._host_fd)  # back to the executor's own: a failure here is a bug worth crashing on

    def enter_for_good(self) -> None:
        """Root only: the calling thread (a relay's, ``/jobs expose``) lives in the session's namespace from now on."""
        _setns(self._ns_fd)

    def argv_prefix(self) -> list[str]:
        """What goes before a child's argv so that it runs in the namespace: nothing as root (``inside`` does it)."""
        if self.root:
            return []
        ns = f"/proc/{self.pid}/ns"
        return [self._nsenter, "--preserve-credentials", f"--user={ns}/user", f"--net={ns}/net", "--"]

    def run_inside(self, argv: Sequence[str], **popen: Any) -> subprocess.Popen[bytes]:
        """Start one helper process in the session's namespace (it listens on the session's loopback): ``popen``
        are ``subprocess.Popen``'s keyword arguments. The caller stops it; the executor's exit stops it too if it
        was started with ``process_group``/``start_new_session`` below the executor (``kill_descendants``)."""
        with self.inside():
            return subprocess.Popen([*self.argv_prefix(), *argv], **popen)

    def alive(self) -> bool:
        """Whether the holder still runs (the namespace itself lives on while the executor holds its fd)."""
        return self._holder is not None and self._holder.poll() is None

    def close(self) -> None:
        """Stop the holder and let the namespace go (the executor's exit does the same)."""
        for fd in (self._ns_fd, self._host_fd, self._stdin_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._ns_fd = self._host_fd = self._stdin_w = -1
        holder, self._holder = self._holder, None
        if holder is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(holder.pid, 9)
            holder.wait()
            if holder.stderr is not None:
                holder.stderr.close()


def _read_all(fd: int) -> bytes:
    """Everything written to ``fd`` until its writers close it (bwrap closes its info fd once it has written)."""
    import select

    chunks = []
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], HOLDER_START_TIMEOUT_S)
            if not ready:
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


_session: dict[int, SessionNet | str] = {}
"""This process's namespace (by pid: an executor forked from a process that had one makes its own), or why none."""


def session_net(bwrap: str) -> SessionNet | None:
    """The executor's session namespace, started at first use; None where it cannot be made (``why_not`` says why):
    commands then get a namespace each, as before, and a job's server is reachable from its own command only."""
    found = _session.get(os.getpid())
    if found is None:
        try:
            found = SessionNet(bwrap)
        except OSError as exc:
            found = str(exc)
        _session[os.getpid()] = found
    return found if isinstance(found, SessionNet) else None


def current() -> SessionNet | None:
    """This process's session namespace if one was made (never starts one)."""
    found = _session.get(os.getpid())
    return found if isinstance(found, SessionNet) else None


def why_not() -> str:
    """Why this process has no session namespace ("" when it has one, or none was asked for yet)."""
    found = _session.get(os.getpid())
    return found if isinstance(found, str) else ""


def close_session_net() -> None:
    """Stop this process's holder (tests; the executor's exit does it by itself)."""
    found = _session.pop(os.getpid(), None)
    if isinstance(found, SessionNet):
        found.close()
