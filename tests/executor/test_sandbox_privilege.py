"""A sandboxed command holds no privilege (ADR 0067): real bwrap, real mounts, run as root where CI and containers do.

Before ``--cap-drop ALL``, a command run by root was uid 0 with every capability in its user namespace, and the mounts
bwrap had made for it were its own to undo: ``mount -o remount,bind,rw /`` wrote any host file, ``umount ~/.ssh``
showed the hidden keys.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashfloat.executor import SandboxProbe, detect_sandbox, preview
from dashfloat.executor._sandbox import BWRAP_ENV, Sandbox, bwrap_binary
from dashfloat.executor._sandbox_probe import PROBE_ARGS
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import SandboxPolicy
from tests.executor.conftest import run_json

PYTHON = os.path.realpath(sys.executable)  # not the venv's link: it may live under the private /tmp
TIMEOUT_S = 60.0
CAPABILITY_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
NO_CAPABILITY = "0000000000000000"


@pytest.fixture
def fixed(root: Path) -> Iterator[Root]:
    r = Root(str(root))
    yield r
    r.close()


@pytest.fixture
def host() -> Iterator[Path]:
    """A host directory outside /tmp (the sandbox's /tmp is private, so a file there would prove nothing)."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp"))
    yield base
    shutil.rmtree(base)


def session(deny: list[str] | None = None, env: dict[str, str] | None = None) -> Sandbox:
    environ = {**os.environ, **(env or {})}
    return Sandbox.for_session(detect_sandbox("workspace-write", False, deny or [], environ), environ)


def run(r: Root, command: str, sandbox: Sandbox) -> dict[str, Any]:
    return run_json("execute_command", {"command": command}, r, TIMEOUT_S, None, sandbox, SandboxPolicy())


def capabilities(output: str) -> dict[str, str]:
    return {k: v for k, _, v in (line.partition(":\t") for line in output.splitlines()) if k in CAPABILITY_SETS}


def test_a_sandboxed_command_holds_no_capability(fixed: Root) -> None:
    result = run(fixed, "grep ^Cap /proc/self/status", session())
    assert capabilities(result["output"]) == dict.fromkeys(CAPABILITY_SETS, NO_CAPABILITY), result["output"]


def test_remounting_the_file_system_writable_fails_and_the_host_file_stays(fixed: Root, host: Path) -> None:
    target = host / "system.conf"
    target.write_text("host\n")
    command = (
        "mount -o remount,bind,rw / ; mount -o remount,rw / ; "
        f"mount -o remount,bind,rw {host} ; echo planted > {target} ; cat {target}"
    )
    result = run(fixed, command, session())
    assert target.read_text() == "host\n"
    assert "Read-only file system" in result["output"], result["output"]


def test_unmounting_a_hidden_path_fails_and_the_secret_stays_unreadable(fixed: Root, host: Path) -> None:
    (host / "creds").mkdir()
    (host / "creds" / "key").write_text("secret-key\n")
    (host / "token").write_text("secret-token\n")
    sandbox = session(deny=[str(host / "creds"), str(host / "token")])
    command = (
        f"umount {host}/creds; umount -l {host}/creds; umount {host}/token; umount -l {host}/token; "
        f"cat {host}/creds/key {host}/token; ls -A {host}/creds"
    )
    result = run(fixed, command, sandbox)
    assert "secret" not in result["output"], result["output"]
    assert (host / "creds" / "key").read_text() == "secret-key\n"


def test_a_home_credential_store_cannot_be_uncovered(fixed: Root, host: Path) -> None:
    (host / ".ssh").mkdir()
    (host / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    sandbox = session(env={"HOME": str(host)})
    command = f"umount {host}/.ssh; umount -l {host}/.ssh; mount --bind {host}/.ssh /mnt; cat {host}/.ssh/id_ed25519"
    result = run(fixed, command, sandbox)
    assert "PRIVATE KEY" not in result["output"], result["output"]


def test_no_mount_namespace_and_no_mount_inside(fixed: Root, root: Path, host: Path) -> None:
    command = (
        "unshare -m true && echo UNSHARED; mount --bind . /mnt && echo BOUND; "
        "mount -t tmpfs none /mnt && echo TMPFS; mount --make-rshared / && echo SHARED; true"
    )
    result = run(fixed, command, session())
    output = result["output"]
    assert not {"UNSHARED", "BOUND", "TMPFS", "SHARED"} & set(output.split()), output


# What a program may still do, unprivileged as any user may: make a user namespace of its own, with every capability
# in it, and a mount namespace below that. The kernel locks the mounts it copies there (they came from a more
# privileged namespace): none can be unmounted, made writable, or bound without what is below it.
NESTED = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
hidden, host_file = sys.argv[1], sys.argv[2]
if libc.unshare(0x10000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
    print("no nested namespace:", os.strerror(ctypes.get_errno()))
    raise SystemExit(0)
said = []
for name, call in [
    ("umount", lambda: libc.umount2(hidden.encode(), 2)),  # MNT_DETACH
    ("remount", lambda: libc.mount(None, b"/", None, 32 | 4096, None)),  # MS_REMOUNT | MS_BIND, no MS_RDONLY
    ("bind", lambda: libc.mount(os.path.dirname(hidden).encode(), b"/tmp", None, 4096, None)),  # MS_BIND, not MS_REC
]:
    said.append(f"{name}={'ok' if call() == 0 else 'refused'}")
print(" ".join(said))
for path in (hidden + "/key", "/tmp/" + os.path.basename(hidden) + "/key"):
    try:
        print(open(path).read())
    except OSError:
        pass
try:
    open(host_file, "w").write("planted")
except OSError as exc:
    print(exc)
"""


def test_a_nested_user_namespace_cannot_undo_the_sandboxs_mounts(fixed: Root, host: Path) -> None:
    (host / "creds").mkdir()
    (host / "creds" / "key").write_text("secret-key\n")
    target = host / "system.conf"
    target.write_text("host\n")
    sandbox = session(deny=[str(host / "creds")])
    (Path(fixed.path) / "nested.py").write_text(NESTED)
    result = run(fixed, f"{PYTHON} nested.py {host}/creds {target}", sandbox)
    output = result["output"]
    assert "secret" not in output and target.read_text() == "host\n", output
    assert "umount=refused remount=refused bind=refused" in output, output


# ---------------------------------------------------------------- the start-up probe verifies it


def _bwrap_without_cap_drop(directory: Path) -> str:
    """A bwrap that runs the real one without its ``--cap-drop`` options: one that cannot drop privileges."""
    script = directory / "bwrap"
    script.write_text(
        "#!/bin/sh\n"
        "skip=0\n"
        "for a do\n"
        "  shift\n"
        '  if [ "$skip" = 1 ]; then skip=0; continue; fi\n'
        '  if [ "$a" = --cap-drop ]; then skip=1; continue; fi\n'
        '  set -- "$@" "$a"\n'
        "done\n"
        f'exec {bwrap_binary(os.environ)} "$@"\n'
    )
    script.chmod(0o755)
    return str(script)


def test_the_probe_drops_every_capability_and_checks_inside() -> None:
    assert ("--cap-drop", "ALL") in itertools.pairwise(PROBE_ARGS)
    assert any("/proc/self/status" in arg for arg in PROBE_ARGS)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root keeps capabilities in the sandbox without --cap-drop")
@pytest.mark.parametrize("early", [False, True])
def test_a_bwrap_that_keeps_privileges_is_no_sandbox(tmp_path: Path, fixed: Root, early: bool) -> None:
    environ = {**os.environ, BWRAP_ENV: _bwrap_without_cap_drop(tmp_path)}
    probe = SandboxProbe(environ) if early else None
    state = detect_sandbox("workspace-write", False, [], environ, probe=probe)
    assert state.mode == "off", state
    assert state.unavailable.startswith("bwrap cannot drop privileges here: "), state.unavailable
    assert "(CapPrm: 000001" in state.unavailable and "remount / read-write" in state.unavailable
    lines = preview("execute_command", {"command": "ls"}, fixed, state).lines
    assert lines[-1] == f"NOT sandboxed ({state.unavailable}): runs with your full permissions"
