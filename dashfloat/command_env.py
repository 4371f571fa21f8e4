"""The environment a command starts from: secrets left out by name, and for a command run unasked only what says
where programs are and how to print (pure: the executor applies it, ``/status`` shows it; ADR 0068).

The environment is where tokens live (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, other providers' keys), and a
command reads it whole (``env``, ``/proc/self/environ``; in the sandbox also bwrap's own, as PID 1). So every
command, sandboxed or not, starts from a filtered copy, and bwrap itself is started with that copy.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

SECRET_NAME_PARTS: Final = ("KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL")
"""A variable whose name holds one of these (any case) is left out of every command's environment unless config
``[sandbox] pass_env`` names it: ``*KEY*``, ``*SECRET*``, … as Codex CLI drops them by default."""

UNASKED_ENV_KEEP: Final = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "COLUMNS", "NO_COLOR"}
)
"""The variables a command run unasked (the read-only allowlist) gets, with every ``LC_*`` one: a hostile tree's link
to ``/proc/self/environ`` passes its word check, so it gets nothing that is not about where programs are and how
to print, ``pass_env`` or not."""

SAFE_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
"""The ``PATH`` of a command run unasked when none of the user's entries is left (all relative or in the workspace)."""


def is_secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a secret (``SECRET_NAME_PARTS``)."""
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def outside_path(path: str, workspace: str) -> str:
    """``PATH`` without the entries that let the workspace choose the program: empty and relative ones (``.``,
    ``bin``, ``node_modules/.bin``: the current directory's) and absolute ones inside ``workspace`` (its real path);
    ``SAFE_PATH`` when nothing is left."""
    inside = workspace.rstrip("/") + "/"
    kept: list[str] = []
    for entry in path.split(os.pathsep):
        if not entry.startswith("/"):
            continue
        real = os.path.realpath(entry)  # a link in the PATH into the workspace is the workspace too
        if real == workspace or (real + "/").startswith(inside):
            continue
        kept.append(entry)
    return os.pathsep.join(kept) or SAFE_PATH


def command_env(
    environ: Mapping[str, str],
    hide_env: Iterable[str],
    pass_env: Iterable[str],
    *,
    unasked: bool,
    workspace: str,
) -> dict[str, str]:
    """The environment one command starts from: ``environ`` less ``hide_env`` (the provider's keys: never, whatever
    ``pass_env`` says) and less every secret-named variable ``pass_env`` does not name; for a command run
    ``unasked``, only ``UNASKED_ENV_KEEP`` and ``LC_*``, with ``outside_path``'s ``PATH``."""
    never = set(hide_env)
    passed = set(pass_env) - never
    env = {
        name: value
        for name, value in environ.items()
        if name not in never and (name in passed or not is_secret_name(name))
    }
    if unasked:
        env = {name: value for name, value in env.items() if name in UNASKED_ENV_KEEP or name.startswith("LC_")}
        env["PATH"] = outside_path(env.get("PATH", ""), posixpath.normpath(workspace))
    return env


def describe_env(hide_env: Sequence[str], pass_env: Sequence[str]) -> str:
    """One line for ``/status``: what every command's environment leaves out, and what config passes through."""
    parts = "/".join(SECRET_NAME_PARTS)
    never = sorted(set(hide_env))
    passed = sorted(set(pass_env) - set(never))
    line = f"commands' environment: variables named like {parts} left out"
    line += f"; passed through ([sandbox] pass_env): {', '.join(passed)}" if passed else " ([sandbox] pass_env: none)"
    if never:
        line += f"; never passed (the provider's key): {', '.join(never)}"
    return line
