"""The console script's first step: fork the agent early, and import nothing heavy before Ctrl-C is handled.

``dashfloat.cli`` imports argparse, the catalogue, the configuration (tens of milliseconds); a Ctrl-C landing in
that import would print a KeyboardInterrupt traceback from the script wrapper. Here it exits 130 quietly instead.

The agent is forked before any of that (issue 19): it forks its LLM worker at once, and the worker's HTTP stack,
the longest import of all, runs on the second core while this process parses the flags and reads the
configuration. Only what every process shares is imported first (the messages, the pipe, OpenSSL).
"""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING, Final, NoReturn

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dashfloat.executor import SandboxProbe
    from dashfloat.runtime import AgentProcess

EXIT_INTERRUPTED = 130  # the same as dashfloat.cli's, which cannot be imported yet
NO_EARLY_AGENT = frozenset({"-h", "--help", "--version", "sessions"})
"""Arguments of a run that starts no agent: an agent forked for it would only be stopped again."""


def _flags(args: Sequence[str]) -> Sequence[str]:
    """The flags part: the words after the first ``--`` are a prompt (``cli.parse_args``, not imported yet)."""
    return args[: list(args).index("--")] if "--" in args else args


def starts_agent(args: Sequence[str]) -> bool:
    """Whether a run with these arguments is worth an early agent (a guess: a wrong one costs time, not
    correctness; the command line starts its own agent when there is none)."""
    return not NO_EARLY_AGENT.intersection(_flags(args))


def early_agent(args: Sequence[str]) -> AgentProcess | None:
    """The agent, forked before the configuration is read, or None (no agent needed, or no state directory:
    the command line says why)."""
    if not starts_agent(args):
        return None
    from dashfloat.runtime import start_agent
    from dashfloat.sessions.state import LOG_FILENAME, ensure_private_dir, state_dir

    state = state_dir(os.environ)
    try:
        ensure_private_dir(state)  # the agent's log lives there
    except OSError:
        return None
    return start_agent(str(state / LOG_FILENAME))


def sandbox_off(args: Sequence[str]) -> bool:
    """Whether the flags say ``--sandbox off`` (as argparse will read them: it takes no abbreviations, and the last
    ``--sandbox`` wins; the configuration may still say off, and a probe started for nothing is discarded)."""
    flags = _flags(args)
    value = None
    for index, arg in enumerate(flags):
        if arg.startswith("--sandbox="):
            value = arg.partition("=")[2]
        elif arg == "--sandbox" and index + 1 < len(flags):
            value = flags[index + 1]
    return value == "off"


def early_sandbox_probe(args: Sequence[str]) -> SandboxProbe | None:
    """The command sandbox's start-up probe, started now (after the agent's fork, which must not inherit it): bwrap
    runs while this process imports the command line and reads the configuration, and the launch collects it."""
    if sandbox_off(args):
        return None
    from dashfloat.executor import SandboxProbe

    return SandboxProbe(os.environ)


STANDARD_STREAMS: Final = (("stdin", "r"), ("stdout", "w"), ("stderr", "w"))


def open_closed_streams() -> None:
    """Give a closed stdin, stdout or stderr (``dashfloat -p x <&-``, a service manager's start) ``/dev/null``, before
    any pipe is opened: the first pipe would otherwise take its number, and reading stdin or printing prose would use
    the agent's pipe (found by review: tracebacks, and a pipe read as stdin)."""
    for fd, (name, mode) in enumerate(STANDARD_STREAMS):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:  # the lowest free number: a lower stream is open, so this one is taken next
                os.dup2(null, fd)
                os.close(null)
            if getattr(sys, name) is None:
                setattr(sys, name, open(fd, mode, encoding="utf-8", errors="replace", closefd=False))  # noqa: SIM115


def entry() -> NoReturn:
    """Fork the agent, start the sandbox probe, import the command line under a Ctrl-C guard, then run it."""
    # Nearly everything the start-up's imports allocate lives to the end: the cyclic collector's passes over that
    # growing heap find next to nothing and cost ~7 % of the imports' time (ADR 0052). Off until the command line is
    # imported; each child turns it back on as it starts (procutil.become_child).
    gc.disable()
    open_closed_streams()
    try:
        # First: msgspec, whose import a Ctrl-C must not interrupt (see import_holding_sigint), without what it
        # does not need (KEPT_OUT_OF_MSGSPEC); shutil, which the agent's pipes import, without the compressors it
        # only names as archive formats (KEPT_OUT_OF_SHUTIL).
        from dashfloat._startup.kept_out import import_msgspec, import_shutil

        import_msgspec()
        import_shutil()
        agent = early_agent(sys.argv[1:])
        probe = early_sandbox_probe(sys.argv[1:]) if agent is not None else None
        from dashfloat.cli import entry as run
    except KeyboardInterrupt:
        # The agent (if forked) sees its pipe close with us, stops its worker and exits; the probe's bwrap dies with
        # us (--die-with-parent).
        os._exit(EXIT_INTERRUPTED)
    gc.enable()
    run(agent, probe)
