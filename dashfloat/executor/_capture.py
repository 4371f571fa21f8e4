"""Bounded capture of a command's output: the head and the tail are kept, the middle is counted and dropped.

Pure (bytes in, text out), so the split is tested without processes. Test runners and builds print their
summary last, so the tail is the larger part (decision record 0022).
"""

from __future__ import annotations

import codecs

from dashfloat.executor._limits import (
    EXEC_OUTPUT_HEAD_BYTES,
    EXEC_OUTPUT_TAIL_BYTES,
    LIVE_CHUNK_MAX_BYTES,
    LIVE_INTERVAL_S,
)


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


class HeadTail:
    """The first ``head_max`` and the last ``tail_max`` bytes of a stream; memory is bounded by 3x that."""

    def __init__(self, head_max: int = EXEC_OUTPUT_HEAD_BYTES, tail_max: int = EXEC_OUTPUT_TAIL_BYTES) -> None:
        self.head_max = head_max
        self.tail_max = tail_max
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.cut_bytes = 0
        self.cut_lines = 0

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes of the stream."""
        self.total += len(chunk)
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        if len(chunk) >= self.tail_max:  # this chunk alone is the new tail: drop the old one without copying it
            dropped = len(chunk) - self.tail_max
            self._count_cut(self.tail, len(self.tail))
            self._count_cut(chunk, dropped)
            self.tail = bytearray(chunk[dropped:])
            return
        self.tail += chunk
        if len(self.tail) > 2 * self.tail_max:  # trimming in batches keeps a flood of small reads linear
            self._trim()

    def _count_cut(self, data: bytes | bytearray, n: int) -> None:
        self.cut_bytes += n
        self.cut_lines += data.count(b"\n", 0, n)

    def _trim(self) -> None:
        excess = len(self.tail) - self.tail_max
        if excess > 0:
            self._count_cut(self.tail, excess)
            del self.tail[:excess]

    @property
    def truncated(self) -> bool:
        """Whether any byte was dropped (the stream was longer than head_max + tail_max)."""
        self._trim()
        return self.cut_bytes > 0

    def text(self) -> str:
        """The kept output as text, with a marker line naming what was cut between head and tail."""
        self._trim()
        if self.cut_bytes == 0:
            return _decode(bytes(self.head + self.tail), final=True)
        tail = bytes(self.tail)
        skip = 0
        while skip < min(3, len(tail)) and _is_continuation(tail[skip]):
            skip += 1  # the cut fell inside a character: its remains are not shown (and are counted)
        head_text = _decode(bytes(self.head), final=False)  # a character cut at the end is dropped
        tail = tail[skip:]
        marker = (
            f"[… output cut: {self.cut_bytes + skip} bytes ({self.cut_lines} lines) not shown here; "
            f"the first {len(self.head)} and the last {len(tail)} of {self.total} bytes are shown …]"
        )
        return f"{head_text}{'' if head_text.endswith(chr(10)) else chr(10)}{marker}\n{_decode(tail, final=True)}"


def _decode(data: bytes, final: bool) -> str:
    return codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=final)


class LiveTail:
    """The newest output of a running command, handed out at most once per ``interval_s``, bounded in bytes.

    A command printing 100k lines produces at most one chunk per interval, each at most ``max_bytes`` (its
    newest bytes; what was skipped is counted), so the agent and the UI see a bounded, steady trickle
    whatever the command does. The model never sees these chunks: its result is the HeadTail capture.
    """

    def __init__(self, max_bytes: int = LIVE_CHUNK_MAX_BYTES, interval_s: float = LIVE_INTERVAL_S) -> None:
        self.max_bytes = max_bytes
        self.interval_s = interval_s
        self.pending = bytearray()
        self.skipped = 0
        self.next_at = 0.0

    def feed(self, chunk: bytes) -> None:
        """Take new output; only the newest ``max_bytes`` are held."""
        if len(chunk) >= self.max_bytes:
            self.skipped += len(self.pending) + len(chunk) - self.max_bytes
            self.pending = bytearray(chunk[-self.max_bytes :])
            return
        self.pending += chunk
        excess = len(self.pending) - self.max_bytes
        if excess > 0:
            self.skipped += excess
            del self.pending[:excess]

    def wait_s(self, now: float) -> float | None:
        """How long until a chunk may go out (None: nothing to send)."""
        return None if not self.pending else max(0.0, self.next_at - now)

    def take(self, now: float) -> tuple[str, int] | None:
        """The text to send now and the bytes skipped before it, or None (nothing new, or too soon)."""
        if not self.pending or now < self.next_at:
            return None
        data = bytes(self.pending)
        start = 0
        while start < min(3, len(data)) and _is_continuation(data[start]) and self.skipped:
            start += 1  # the front was cut inside a character
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text = decoder.decode(data[start:], final=False)
        held = decoder.getstate()[0]  # an incomplete character at the end waits for its other bytes
        skipped, self.skipped = self.skipped + start, 0
        self.pending = bytearray(held)
        self.next_at = now + self.interval_s
        if not text:
            return None
        return text, skipped
