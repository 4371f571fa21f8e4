"""The byte source that feeds sseclient-py: it enforces the frame cap before anything is buffered."""

from __future__ import annotations

from collections.abc import Iterator

from dashfloat.llm._errors import StreamError

# Where sseclient-py ends an event: its buffer, grown line piece by line piece, ends in a blank line.
_BOUNDARIES = (b"\r\r", b"\n\n", b"\r\n\r\n")
_TAIL_BYTES = 4


def frame_capped(chunks: Iterator[bytes], max_bytes: int) -> Iterator[bytes]:
    """Pass ``chunks`` through, failing with frame_too_large once one event exceeds ``max_bytes``.

    The count mirrors sseclient-py's own buffering exactly (``chunk.splitlines(True)``, ``endswith`` on the
    accumulated event), so no line-ending trick can make it see a boundary that sseclient does not.
    """
    pending = 0  # bytes sseclient holds for the current event
    tail = b""  # the last bytes of that event: all that ``endswith`` looks at
    for chunk in chunks:
        for piece in chunk.splitlines(True):
            pending += len(piece)
            tail = (tail + piece)[-_TAIL_BYTES:]
            if tail.endswith(_BOUNDARIES):
                pending, tail = 0, b""
        if pending > max_bytes:
            raise StreamError(
                "frame_too_large",
                f"the provider sent one event larger than {max_bytes // 1024} KiB; "
                "the stream was stopped: try again, or report the provider's broken framing.",
            )
        yield chunk


SSE_FIELD_STARTS = (b"data:", b":", b"event:", b"id:", b"retry:")


def looks_like_sse(first: bytes) -> bool:
    """Whether the body's first bytes read as an event stream (for servers with a wrong Content-Type)."""
    return first.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(SSE_FIELD_STARTS)
