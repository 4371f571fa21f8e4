"""The byte source that feeds sseclient-py: it enforces the frame cap before anything is buffered."""

from __future__ import annotations

from collections.abc import Iterator

from dashfloat.llm._errors import StreamError

# Where sseclient-py ends an event: a blank line in any of the three line-ending styles.
_BOUNDARIES = (b"\r\n\r\n", b"\n\n", b"\r\r")
_TAIL_BYTES = 3


def _last_boundary_end(window: bytes) -> int:
    """The offset just past the last event boundary in ``window``, or -1."""
    best = -1
    for boundary in _BOUNDARIES:
        found = window.rfind(boundary)
        if found >= 0:
            best = max(best, found + len(boundary))
    return best


def frame_capped(chunks: Iterator[bytes], max_bytes: int) -> Iterator[bytes]:
    """Pass ``chunks`` through, failing with frame_too_large once one event exceeds ``max_bytes``."""
    pending = 0  # bytes since the last event boundary
    tail = b""
    for chunk in chunks:
        window = tail + chunk
        end = _last_boundary_end(window)
        pending = len(window) - end if end >= 0 else pending + len(chunk)
        if pending > max_bytes:
            raise StreamError(
                "frame_too_large",
                f"the provider sent one event larger than {max_bytes // 1024} KiB; "
                "the stream was stopped: try again, or report the provider's broken framing.",
            )
        tail = window[-_TAIL_BYTES:]
        yield chunk


SSE_FIELD_STARTS = (b"data:", b":", b"event:", b"id:", b"retry:")


def looks_like_sse(first: bytes) -> bool:
    """Whether the body's first bytes read as an event stream (for servers with a wrong Content-Type)."""
    return first.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(SSE_FIELD_STARTS)
