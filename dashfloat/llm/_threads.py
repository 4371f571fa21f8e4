"""The threads streams run on (``StreamThreads``): kept between streams, each woken for the next one."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

try:  # queue.SimpleQueue itself, without queue's module (heapq and more: memory in the worker, ADR 0053)
    from _queue import SimpleQueue
except ImportError:  # an interpreter without CPython's C module
    from queue import SimpleQueue


class StreamThreads:
    """The threads streams run on, each kept once its stream ends and woken for the next one. A thread started per
    stream cost every episode a thread's start (its stack mapped, then a wait until the scheduler first ran it),
    measured 0.6–1.7 ms from StartStream to the stream's first line on the loaded machine, against a kept
    thread's wake-up. As many threads as streams ever ran at once (the main stream, a summary); idle ones wait."""

    def __init__(self) -> None:
        self._jobs: SimpleQueue[Callable[[], None]] = SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def run(self, job: Callable[[], None]) -> None:
        """Run ``job`` on an idle thread, or a new one when none is idle."""
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._serve, name="llm-stream", daemon=True).start()

    @property
    def idle(self) -> int:
        """Threads waiting for a stream."""
        with self._lock:
            return self._idle

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except Exception:  # a stream answers its own failures; whatever escapes must not cost the thread
                import traceback  # only then (issue 19: each module the worker imports costs memory, ADR 0053)

                traceback.print_exc(file=sys.stderr)
            with self._lock:
                self._idle += 1
