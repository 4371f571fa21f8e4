"""Piped input for a headless turn: ``make test 2>&1 | dashfloat -p "why does it fail?"`` sends the output.

Read by the main process before anything starts. What is kept is bounded like a command's output (the head
and the larger tail: a log's summary comes last, decision record 0022), and so is what is read at all. A
pipe nobody writes to (a parent that spawned us with an open stdin it never closes) must not hang the run:
without a first byte (or the end) within ``STDIN_FIRST_BYTE_WAIT_S`` the turn starts without it, and says so.
"""

from __future__ import annotations

import os
import select
import stat
from typing import Final, NamedTuple

from dashfloat.mentions import PIPED_BLOCK_START

STDIN_FIRST_BYTE_WAIT_S: Final = 1.0
"""How long an open, silent stdin is waited for before the turn starts without it."""
STDIN_READ_MAX_BYTES: Final = 64 * 1024 * 1024
"""Piped bytes read at most (the head and tail of them are kept); an endless producer is not drained."""
STDIN_PROMPT_MAX_BYTES: Final = 256 * 1024
"""``-p -``: the prompt itself from stdin, refused over this."""
_READ_BYTES: Final = 64 * 1024


class PipedInput(NamedTuple):
    """What stdin held, as the model gets it: the kept text (head, cut marker, tail) and whether reading stopped."""

    text: str
    stopped: bool
    """``STDIN_READ_MAX_BYTES`` were read: reading stopped there (an endless producer is not drained)."""


def is_piped(fd: int) -> bool:
    """Whether ``fd`` is a pipe, a socket or a regular file (not a terminal, not ``/dev/null``)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISREG(mode)


def _first_byte(fd: int, wait_s: float | None) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(None if wait_s is None else int(wait_s * 1000)))


def read_piped(
    fd: int, read_max: int = STDIN_READ_MAX_BYTES, wait_s: float = STDIN_FIRST_BYTE_WAIT_S
) -> PipedInput | None:
    """``fd`` to its end (at most ``read_max`` bytes), head and tail kept; None when it stayed silent ``wait_s``."""
    if not _first_byte(fd, wait_s):
        return None
    from dashfloat.executor import HeadTail  # the same split as a command's output (only when piped)

    kept = HeadTail()
    while kept.total < read_max:
        chunk = os.read(fd, min(_READ_BYTES, read_max - kept.total))
        if not chunk:
            return PipedInput(kept.text(), stopped=False)
        kept.feed(chunk)
    return PipedInput(kept.text(), stopped=True)  # whatever still comes is not waited for


def read_prompt(fd: int, max_bytes: int = STDIN_PROMPT_MAX_BYTES) -> bytes | None:
    """``-p -``: all of ``fd`` (waiting as long as it takes); None when it holds more than ``max_bytes``."""
    _first_byte(fd, None)
    chunks: list[bytes] = []
    held = 0
    while chunk := os.read(fd, min(_READ_BYTES, max_bytes + 1 - held)):
        chunks.append(chunk)
        held += len(chunk)
        if held > max_bytes:
            return None
    return b"".join(chunks)


def with_piped(prompt: str, piped: PipedInput) -> str:
    """The prompt, then the piped text in a ``<stdin>`` block (nothing added when it was empty)."""
    text = piped.text.rstrip("\n")
    if not text.strip() and not piped.stopped:
        return prompt
    stopped = (
        f"\n[… reading stopped after {STDIN_READ_MAX_BYTES} bytes: anything later was not read]"
        if piped.stopped
        else ""
    )
    return f"{prompt}{PIPED_BLOCK_START}{text}{stopped}\n</stdin>"
