"""How a sandboxed stdio MCP server gets the descriptors its bwrap line binds (ADR 0086), shared by the executor, which
builds the line, and the MCP host, whose SDK starts it.

The executor builds a server's bwrap line as a command's (``Sandbox.wrap``): the workspace bound from the held root
descriptor, the git metadata from descriptors opened beneath it (``GitBinds``). The SDK starts the server with every
descriptor but 0, 1 and 2 closed, and its stderr is the one the host chooses: a socket. So the line starts with a
small launcher (the standard library only) that receives the descriptors over that socket (``SCM_RIGHTS``), puts each
at the number the line names, sets the file-size bound and execs bwrap; bwrap closes them once bound.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Sequence
from typing import Final

FDS_PREFIX: Final = "--dashfloat-fds="
"""The launcher's first argument: the descriptor numbers its line names (the host hands over only these)."""
LAUNCH_FAILED_EXIT: Final = 125
"""The launcher's exit status when it did not get its descriptors (nothing of the server ran)."""
_HIGH_FD: Final = 1024
"""Where received descriptors wait before they are put at their numbers (none of which is this high)."""

LAUNCHER: Final = f"""
import fcntl, os, resource, socket, sys
named = [int(n) for n in sys.argv[1].removeprefix({FDS_PREFIX!r}).split(",") if n]
try:
    with socket.socket(fileno=os.dup(2)) as s:
        got = socket.recv_fds(s, 1, len(named))[1]
except OSError:
    got = []
if len(got) != len(named):
    sys.stderr.write("the sandbox's descriptors did not arrive: the MCP server was not started\\n")
    sys.exit({LAUNCH_FAILED_EXIT})
waiting = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, {_HIGH_FD}) for fd in got]
for fd in got:
    os.close(fd)
for fd, number in zip(waiting, named):
    os.dup2(fd, number)
    os.close(fd)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
bound = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (bound if hard == resource.RLIM_INFINITY else min(bound, hard), hard))
os.execv(sys.argv[4], sys.argv[4:])
"""
"""The launcher: ``-c LAUNCHER --dashfloat-fds=3,7 FSIZE -- bwrap …`` (``python -I -S``: no site, no DashFloat)."""


def launcher_argv(line: Sequence[str], fds: Sequence[int], max_file_bytes: int) -> tuple[str, list[str]]:
    """The command and arguments that run ``line`` (bwrap's) once ``fds`` are at their numbers."""
    python = os.path.realpath(sys.executable)
    numbers = ",".join(str(fd) for fd in fds)
    return python, ["-I", "-S", "-c", LAUNCHER, FDS_PREFIX + numbers, str(max_file_bytes), "--", *line]


def launch_fds(args: Sequence[str], held: Collection[int]) -> list[int]:
    """The descriptors to hand a server started with ``args``: those its launcher names, if the host holds each;
    ``[]`` for a server that is not launched so (unsandboxed: it gets none)."""
    if len(args) < 5 or list(args[:4]) != ["-I", "-S", "-c", LAUNCHER] or not args[4].startswith(FDS_PREFIX):
        return []
    named = [int(n) for n in args[4].removeprefix(FDS_PREFIX).split(",") if n.isdigit()]
    return named if named and all(fd in held for fd in named) else []
