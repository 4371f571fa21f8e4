"""The sandbox detected at start: bwrap run once under the confinement every command gets, and the session's state."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Final

from dashfloat.executor._sandbox import (
    DEFAULT_DENY_READ,
    DROP_PRIVILEGES,
    bwrap_binary,
    expand_denies,
    home_dirs,
    session_sockets,
)
from dashfloat.protocol import SandboxMode, SandboxState

# The start-up probe runs `true` in a sandbox; a machine that cannot do that in this long cannot sandbox.
SANDBOX_PROBE_TIMEOUT_S: Final = 10.0

PROBE_PRIVILEGED_EXIT: Final = 86
"""The probe's exit status when the command inside still holds a capability (or it cannot tell)."""
_PROBE_SCRIPT: Final = (
    "n=0; while read -r k v; do case $k in CapPrm:|CapEff:|CapBnd:) "
    f'[ "$v" = 0000000000000000 ] || {{ echo "$k $v" >&2; exit {PROBE_PRIVILEGED_EXIT}; }}; n=$((n+1));; esac; '
    "done </proc/self/status; "
    f'[ $n = 3 ] || {{ echo "no capability sets in /proc/self/status" >&2; exit {PROBE_PRIVILEGED_EXIT}; }}'
)
"""Inside the probe's sandbox, with sh builtins only (no process more): the permitted, effective and bounding sets are
empty. ``PROBE_PRIVILEGED_EXIT`` naming the first that is not."""

PROBE_ARGS: Final = (
    "--ro-bind",
    "/",
    "/",
    "--unshare-all",
    "--as-pid-1",
    "--die-with-parent",
    *DROP_PRIVILEGES,
    "--",
    "/bin/sh",
    "-c",
    _PROBE_SCRIPT,
)
"""What the start-up probe runs under bwrap: enough to show namespaces work here and that a command in them holds no
privilege, and nothing left behind."""


class Probe:
    """The start-up probe, running: started as early as the main process can (before it imports the command line,
    issue 19), so that bwrap's few milliseconds overlap that work instead of following it; ``detect`` collects it.
    Its arguments are fixed: only the bwrap binary (``env``) and whether it is needed at all (``mode``) vary, and a
    probe the configuration turns out not to need is discarded."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._outcome: str | None = None
        try:
            # A group of its own: stopping it reaches whatever it started (bwrap's half inside the namespace, a
            # wrapper's children), which would otherwise hold its stderr open and be left running.
            self._process = subprocess.Popen(
                [bwrap_binary(env), *PROBE_ARGS],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                process_group=0,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            self._outcome = f"cannot run bwrap: {exc}"

    def outcome(self) -> str:
        """Wait for it (at most SANDBOX_PROBE_TIMEOUT_S from now): empty when bwrap could sandbox, else why not.

        The bound counts from this call, not from the probe's start: what ran in between (reading a slow piped
        stdin) is not the probe's time, and a probe that finished long ago must not read as one that never did —
        that would turn the sandbox off on a machine that has one."""
        if self._outcome is None:
            assert self._process is not None
            try:
                _, stderr = self._process.communicate(timeout=SANDBOX_PROBE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._stop()
                self._outcome = f"cannot run bwrap: it did not finish within {SANDBOX_PROBE_TIMEOUT_S:g} s"
            else:
                code = self._process.returncode
                why = stderr.decode(errors="replace").strip().splitlines()
                said = why[-1] if why else f"exit status {code}"
                if code == PROBE_PRIVILEGED_EXIT:
                    self._outcome = (
                        f"bwrap cannot drop privileges here: a sandboxed command kept capabilities ({said}), so it "
                        "could remount / read-write and unmount what hides the credential stores"
                    )
                else:
                    self._outcome = "" if code == 0 else f"bwrap cannot create namespaces here: {said}"
        return self._outcome

    def discard(self) -> None:
        """Stop it if it still runs, and reap it (a start that ends before it was collected, or a session without a
        sandbox)."""
        self._stop()
        if self._outcome is None:
            self._outcome = "cannot run bwrap: the probe was discarded"

    def _stop(self) -> None:
        """Kill its whole group and reap bwrap, without reading its stderr to the end: a process it left behind
        (bwrap's inner half killed before it was set up, a wrapper script's child) may hold that pipe for good."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # its group's id is its pid (process_group=0)
        if process.stderr is not None:
            process.stderr.close()
        process.wait()


def detect(
    mode: SandboxMode,
    network: bool,
    deny_read: Sequence[str],
    env: Mapping[str, str],
    hide_env: Sequence[str] = (),
    probe: Probe | None = None,
) -> SandboxState:
    """The session's sandbox: ``mode`` if this machine can run it, else ``off`` with the reason. ``probe``: one
    started earlier (``Probe(env)``), else the probe runs now."""
    home = env.get("HOME") or os.path.expanduser("~")
    denies = expand_denies([*DEFAULT_DENY_READ, *session_sockets(env), *deny_read], home)
    hidden = sorted({name for name in hide_env if name})
    if mode == "off":
        if probe is not None:
            probe.discard()
        return SandboxState(mode="off", network=network, deny_read=denies, hide_env=hidden)
    homes, keep = home_dirs(home, env)
    # --as-pid-1 (PROBE_ARGS): no reaper inside the namespace. bwrap's reaper outlives bwrap by a few ms, and orphaned
    # it became init's zombie for good where init does not reap (a container's PID 1): one per start.
    unavailable = (probe if probe is not None else Probe(env)).outcome()
    if unavailable:
        return SandboxState(mode="off", network=network, unavailable=unavailable, deny_read=denies, hide_env=hidden)
    return SandboxState(mode=mode, network=network, deny_read=denies, hide_env=hidden, home=homes, home_keep=keep)
