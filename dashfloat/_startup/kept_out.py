"""Imports made without what they would drag in for nothing, and not interruptible by Ctrl-C (issue 19).

A meta path finder says a few packages are not installed while one import runs (``import_without``): msgspec without
typing_extensions (ADR 0055), shutil without bz2 and lzma (ADR 0061). Both are imported first thing in a start
(``_entry``), with SIGINT held back (``import_holding_sigint``: msgspec's initialisation must not be interrupted).
"""

from __future__ import annotations

import importlib
import signal
import sys
from typing import Any, Final


def import_holding_sigint(name: str) -> None:
    """Import ``name`` with SIGINT held back until the import is done; a Ctrl-C meanwhile arrives right after it.

    msgspec's module initialisation imports ``datetime`` and does not check that import (``PyDateTime_IMPORT``):
    a KeyboardInterrupt raised inside it is lost, msgspec is left without datetime's C API, and the first decoder
    built afterwards segfaults (a Ctrl-C 0.05-0.2 s into a start: 7 SIGSEGVs in 400 runs). Held back, the signal
    is delivered once the import is over, where Python raises KeyboardInterrupt as it should. Call it on the main
    thread, before anything else imports the module and while no other thread runs (one that does not hold SIGINT
    back would take the signal).
    """
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        importlib.import_module(name)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


KEPT_OUT_OF_MSGSPEC: Final = frozenset({"typing_extensions"})
"""Packages msgspec imports when they are installed but does not need: without typing_extensions it takes
``get_type_hints``, ``Required`` and ``NotRequired`` from ``typing`` (complete on 3.11, and what it does in an install
that lacks it: only mypy requires it here). Importing it costs typing_extensions and ``inspect`` (with ast, dis,
tokenize), ~7 ms before the agent's fork that nothing else on a start needs (ADR 0055)."""


class _KeptOut:
    """A meta path finder that says ``packages`` are not installed (while one import runs only)."""

    def __init__(self, packages: frozenset[str]) -> None:
        self.packages = packages

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] in self.packages:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def import_without(name: str, kept_out: frozenset[str]) -> None:
    """Import ``name`` holding SIGINT back (``import_holding_sigint``) while ``kept_out`` look uninstalled; a later
    import of one of them anywhere finds the real package. Should ``name`` need one after all (a future version), it
    is imported again as installed: a start never fails for this. Where it is imported already, nothing changes."""
    finder = _KeptOut(kept_out)
    sys.meta_path.insert(0, finder)
    try:
        import_holding_sigint(name)
        return
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] not in kept_out:
            raise
    finally:
        sys.meta_path.remove(finder)
    import_holding_sigint(name)


def import_msgspec() -> None:
    """msgspec, as ``import_without`` imports it without KEPT_OUT_OF_MSGSPEC."""
    import_without("msgspec", KEPT_OUT_OF_MSGSPEC)


KEPT_OUT_OF_SHUTIL: Final = frozenset({"bz2", "lzma"})
"""Modules shutil imports only to say whether ``make_archive`` and ``unpack_archive`` may offer the bztar and xztar
formats, which nothing of ours uses. multiprocessing's pipes import tempfile, and tempfile shutil, before the agent's
fork: with them, ~1-2 ms of a start's serial phase (ADR 0061). Without them shutil offers zip, tar and gztar only;
a later ``import bz2`` or ``import lzma`` anywhere gets the real module."""


def import_shutil() -> None:
    """shutil, as ``import_without`` imports it without KEPT_OUT_OF_SHUTIL."""
    import_without("shutil", KEPT_OUT_OF_SHUTIL)
