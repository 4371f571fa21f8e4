"""Importing a process's heavy modules on a thread of their own, while the process already answers its pipe.

Two imports sat on the first request's path only because they blocked the thread that reads the pipe (ADR 0045):
the LLM process's HTTP stack (``requests``, ~70 ms of CPU), which held back the window discovery, and the agent's
import of the executor's code before it forks the executor (~20 ms), which held back the agent's reply to the
discovery. On a thread, the reading thread goes on meanwhile; the interpreter's switch interval is short while the
import runs, so that thread gets the GIL within that, not within the default 5 ms.

A process must not fork while such an import runs (the child would inherit the import locks taken): ``wait``
first.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
from typing import Final

from dashfloat._startup.fork import release_free_heap

SWITCH_INTERVAL_WHILE_IMPORTING_S: Final = 0.0002
"""The interpreter's thread switch interval while a preload runs: a thread woken by its pipe or a socket waits at
most this long for the GIL held by the importing thread (each of a probe's socket calls is such a wait). Put back
when the import ends."""


class PreloadFailed(Exception):
    """The modules could not be imported (a broken install)."""


class Preload:
    """Imports ``modules`` (``module``, or ``module:attribute`` for a package's lazy export) on a thread, at once.
    ``wait`` blocks until done; ``fileno`` (with ``notify``) becomes readable then, for a loop that waits on its
    pipes; ``trim`` gives the import's freed heap back afterwards."""

    def __init__(self, modules: tuple[str, ...], *, notify: bool = False, trim: bool = False) -> None:
        self._modules = modules
        self._trim = trim
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._pipe = os.pipe() if notify else None
        self._previous_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._previous_interval, SWITCH_INTERVAL_WHILE_IMPORTING_S))
        self._thread = threading.Thread(target=self._load, name="preload", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        try:
            for name in self._modules:
                module, _, attribute = name.partition(":")
                imported = importlib.import_module(module)
                if attribute:
                    getattr(imported, attribute)
            if self._trim:
                release_free_heap()  # the import's scratch, freed but resident (ADR 0042)
        except BaseException as exc:  # handed to whoever waits: it decides what a failed import means
            self._error = exc
        finally:
            sys.setswitchinterval(self._previous_interval)
            self._done.set()
            if self._pipe is not None:
                with contextlib.suppress(OSError):
                    os.write(self._pipe[1], b"!")

    def done(self) -> bool:
        """Whether the import has ended (successfully or not): ``wait`` then returns at once."""
        return self._done.is_set()

    def wait(self) -> None:
        """Block until the import has ended and its thread is gone; PreloadFailed when it raised."""
        self._thread.join()
        if self._error is not None:
            raise PreloadFailed(f"{type(self._error).__name__}: {self._error}") from self._error

    def fileno(self) -> int:
        """A descriptor readable once the import has ended (only with ``notify``)."""
        if self._pipe is None:
            raise ValueError("this preload was started without notify")
        return self._pipe[0]

    def close(self) -> None:
        """Release the notification pipe (after ``wait``)."""
        if self._pipe is not None:
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None
