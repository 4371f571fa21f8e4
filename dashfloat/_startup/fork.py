"""How a child is forked so that it shares the most with its parent (issue 19: idle memory).

Each trick, with its reason where it lives: the lean fork context (``FORK``: multiprocessing's fork without its
bootstrap, ADR 0053), the C heap's freed pages given back (``release_free_heap``, ADR 0042), one malloc arena for
every thread (``single_malloc_arena``, ADR 0046), the interned-names table grown before the fork
(``make_room_for_interned_names``, ADR 0060), and the collector's view of inherited objects frozen
(``start_sharing``). Every fork of a process of ours goes through ``FORK`` and ``start_sharing``.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import multiprocessing.process
import multiprocessing.util
import os
import sys
from multiprocessing import popen_fork
from multiprocessing.context import ForkContext, ForkProcess
from multiprocessing.process import BaseProcess
from typing import Any, Final

_LEAN_FORK_NEEDS: Final = (
    (popen_fork.Popen, "_launch"),
    (multiprocessing.process, "_children"),
    (multiprocessing.process, "_current_process"),
    (multiprocessing.process, "_parent_process"),
    (multiprocessing.util, "_finalizer_registry"),
    (multiprocessing.util, "_run_after_forkers"),
)
"""What the lean fork below replaces or sets of multiprocessing's (CPython 3.11-3.13); where one is missing, the
stock fork context is used."""


def _run_forked(process: BaseProcess) -> int:
    """In a child just forked: run ``process`` as multiprocessing's bootstrap does, less what we never use; its exit
    code.

    Kept: the child is ``current_process()``, has none of its parent's children (and no ``parent_process()``: the
    bootstrap's is a handle on a pipe we do not make), runs none of its parent's finalizers and runs
    multiprocessing's after-fork hooks; the exit code is the bootstrap's (``SystemExit``'s; 1 and the traceback on
    stderr for an exception); stdout and stderr are flushed. Left out: stdin reopened on /dev/null (each child puts
    /dev/null on fd 0 itself, ``become_child``), the start method forced, the sentinel pipe to the parent
    (``die_with_parent`` instead), waiting for non-daemon threads (ours are all daemons). Every line the bootstrap
    runs writes to pages the child shares with its parent (code run for the first time, reference counts), which
    the kernel then copies: ~0.2 MB a child (issue 19: idle memory, ADR 0053).
    """
    mp_process: Any = multiprocessing.process
    mp_util: Any = multiprocessing.util
    mp_process._children = set()
    mp_process._current_process = process
    mp_process._parent_process = None  # no sentinel pipe to it: its death is signalled (die_with_parent)
    mp_util._finalizer_registry.clear()
    mp_util._run_after_forkers()
    try:
        process.run()
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            sys.stderr.write(f"{exc.code}\n")
            code = 1
    except BaseException:
        import traceback  # only now: a child imports nothing it does not need (ADR 0053)

        sys.stderr.write(f"Process {process.name}:\n")
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.flush()
    return code


class _LeanPopen(popen_fork.Popen):
    """multiprocessing's fork Popen, its child running ``_run_forked`` instead of the bootstrap."""

    def _launch(self, process_obj: BaseProcess) -> None:
        parent_r, child_w = os.pipe()  # the sentinel: readable once the child is gone (its end closes with it)
        self.pid = os.fork()
        if self.pid == 0:
            code = 1
            try:
                os.close(parent_r)
                code = _run_forked(process_obj)
            finally:
                os._exit(code)
        os.close(child_w)
        mp_util: Any = multiprocessing.util
        self.finalizer = mp_util.Finalize(self, mp_util.close_fds, (parent_r,))
        self.sentinel = parent_r


class _LeanForkProcess(ForkProcess):
    @staticmethod
    def _Popen(process_obj: BaseProcess) -> popen_fork.Popen:
        return _LeanPopen(process_obj)


class _LeanForkContext(ForkContext):
    Process = _LeanForkProcess


def fork_context(lean: bool, needs: tuple[tuple[object, str], ...] = _LEAN_FORK_NEEDS) -> ForkContext:
    """The fork context our children start from: the lean one where multiprocessing has what it replaces."""
    if lean and all(hasattr(owner, name) for owner, name in needs):
        return _LeanForkContext()
    return multiprocessing.get_context("fork")


# Fork: a child starts in milliseconds and shares the parent's imported pages; every fork happens from a
# single-threaded process (the agent) or before the UI starts (docs/decisions/0001-runtime.md).
FORK: Final = fork_context(lean=True)


def release_free_heap() -> bool:
    """Give the C heap's free pages back to the kernel (glibc ``malloc_trim``); False where there is none.

    Imports free most of what they allocate (a module's code read whole, then unmarshalled; the compiler's and
    the import system's scratch), but glibc keeps the freed pages resident, and a child forked meanwhile shares
    them as well. Trimmed, they stop counting in any process (issue 19: idle memory). It costs well under a
    millisecond on our heaps; it is called at the moments a process's start-up allocations are done.
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False  # not glibc (musl, macOS): nothing to give back this way
    trim(0)
    return True


_M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


def single_malloc_arena() -> bool:
    """Let every thread allocate from glibc's main arena (``mallopt(M_ARENA_MAX, 1)``); False where there is none.

    By default glibc gives each new thread an arena of its own, and what the thread allocated there stays resident
    beside the main arena's free pages. The LLM worker and the agent import on a thread while their loop serves
    (ADR 0045): each import left its scraps in a second arena (issue 19: a few tenths of a MB of idle PSS across
    the four, ADR 0046). Our threads allocate holding the GIL, so one arena's lock is hardly contended. It takes
    effect if no thread of this process has had an arena yet; forked children inherit it.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False  # not glibc
    return int(mallopt(_M_ARENA_MAX, 1)) == 1


INTERNED_NAMES_HEADROOM: Final = 2048
"""Names interned (and dropped at once) before each fork, so that the interpreter's table of interned names grows
before the fork, once, in the parent, when it is this close to full: ``make_room_for_interned_names``."""


def make_room_for_interned_names() -> None:
    """Grow CPython's table of interned names now if it is within INTERNED_NAMES_HEADROOM names of full.

    Every name a module defines or uses is interned in one dict per interpreter. Our forks came when it was nearly
    full (16384 slots, ~140 free, at both the agent's and the LLM worker's fork): the first imports after a fork then
    grew it in each process on its own, and each holds a table of its own (~0.4 MB, all private) where they could
    share one. Interning short-lived names fills the free slots (they die at once and leave dummies, which a growth
    drops): near full, the table grows here; otherwise it loses that many free slots (issue 19, ADR 0060).
    """
    for number in range(INTERNED_NAMES_HEADROOM):
        sys.intern(f"\0dashfloat headroom {number}")


def start_sharing(process: BaseProcess) -> None:
    """Start a forked child with our objects frozen for its garbage collector (``gc.freeze``).

    A child's full collection would otherwise write to every inherited object's header, copying the pages it
    shares with us (and with its siblings) into private ones. We unfreeze at once: our own collections go on as
    before; the child's never visit what it inherited (issue 19: less memory across the four processes).
    """
    single_malloc_arena()  # before the child's threads, and before ours: the first fork comes before any thread
    release_free_heap()  # what we freed is not worth sharing: the child would inherit it resident
    make_room_for_interned_names()  # the child's own first names go into the table it shares with us
    gc.freeze()
    try:
        process.start()
    finally:
        gc.unfreeze()
