"""What the sandbox refused a command, read from its output and the proxy's log: one line each for the model, and
what a person may grant for a re-run (pure; ADR 0082).

A refused write shows as ``EROFS`` ("Read-only file system") or ``EACCES``/``EPERM`` on a path outside what the call
could write; a refused host as the proxy's own report; a program that ignores the proxy variables as a failed name
lookup or an unreachable network.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Final

import msgspec

REFUSAL_PREFIX: Final = "[sandbox refused: "
"""How each refusal line the model reads begins (the agent and the UI look for nothing else)."""
REFUSED_PATHS_MAX: Final = 3
"""The most refused paths (and hosts) named in one result; more are counted."""
OUTPUT_SCAN_MAX_CHARS: Final = 64 * 1024
"""How much of the output's end is read for refusals (the kept output is bounded anyway)."""

_WRITE_ERROR: Final = re.compile(
    r"read-only file system|\bEROFS\b|permission denied|\bEACCES\b|\bEPERM\b|operation not permitted", re.IGNORECASE
)
_PATH: Final = re.compile(r"""(?:^|[\s'"`(=:\[‘“])(/[^\s'"`),:\]’”]+)""")
"""An absolute path as error lines quote it: bare, in ASCII quotes, or in the curly ones GNU tools use in UTF-8."""
_NO_NETWORK: Final = re.compile(
    r"could not resolve host|temporary failure in name resolution|name or service not known|getaddrinfo (?:enotfound|"
    r"eai_again)|network is unreachable|no address associated with hostname|dial tcp: lookup|failed to lookup address|"
    r"nodename nor servname|name resolution",
    re.IGNORECASE,
)


class Refusal(msgspec.Struct, frozen=True):
    """What the sandbox refused one command: writes outside its paths, hosts the proxy refused, the network at all."""

    paths: list[str] = []
    """Absolute paths it could not write (outside every writable path)."""
    hosts: list[str] = []
    """The proxy's reasons, one per refused host."""
    network: str = ""
    """Why it had no network at all (its mode, a proxy that could not start), when the output shows it wanted some."""

    def lines(self) -> list[str]:
        """One line each, as the model reads them."""
        found: list[str] = []
        if self.paths:
            shown = ", ".join(self.paths[:REFUSED_PATHS_MAX])
            more = f" and {len(self.paths) - REFUSED_PATHS_MAX} more" if len(self.paths) > REFUSED_PATHS_MAX else ""
            found.append(
                f"{REFUSAL_PREFIX}writing {shown}{more}: outside the paths this command may write (the working "
                "directory, /tmp and [sandbox] writable)]"
            )
        found += [f"{REFUSAL_PREFIX}{why}]" for why in self.hosts[:REFUSED_PATHS_MAX]]
        if self.network:
            found.append(f"{REFUSAL_PREFIX}the network: {self.network}]")
        return found

    def __bool__(self) -> bool:
        return bool(self.paths or self.hosts or self.network)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def refused_writes(output: str, writable: Sequence[str]) -> list[str]:
    """The absolute paths in the output's error lines (read-only file system, permission denied) outside every
    ``writable`` root; a line naming npm's ``path`` counts as one once the output shows such an error."""
    text = output[-OUTPUT_SCAN_MAX_CHARS:]
    if not _WRITE_ERROR.search(text):
        return []
    found: list[str] = []
    for line in text.splitlines():
        if not (_WRITE_ERROR.search(line) or re.search(r"\bpath\b", line)):
            continue
        for match in _PATH.finditer(line):
            if match.start(1) == 0 and line[match.end(1) :].startswith(":"):
                continue  # the program's own name, as sh and most tools begin their error lines
            path = os.path.normpath(match.group(1))
            if path.startswith(("/proc/", "/dev/", "/sys/")) or any(_within(path, root) for root in writable):
                continue
            if path not in found:
                found.append(path)
    return found


def wanted_network(output: str) -> bool:
    """Whether the output shows a failed name lookup or an unreachable network."""
    return bool(_NO_NETWORK.search(output[-OUTPUT_SCAN_MAX_CHARS:]))


def grant_for(path: str, home: str) -> str:
    """The directory a person's keypress would make writable for a refused ``path``: its first directory below the home
    (``~/.npm`` for ``~/.npm/_cacache/x``, ``~/.cache/uv`` below ``~/.cache``); ``""`` outside the home."""
    home = os.path.realpath(home) if home else ""
    if not home or not _within(path, home) or path == home:
        return ""
    parts = os.path.relpath(path, home).split("/")
    depth = 2 if parts[0] in (".cache", ".local", ".config") and len(parts) > 1 else 1
    return os.path.join(home, *parts[:depth])
