"""The bytes between the socket and the event parser: content decoding, event framing and their caps.

sseclient-py stitches an event by concatenating it line by line (``data += line``), which is quadratic:
an event of a million short lines cost seconds of CPU before any cap fired. Here each event is built
linearly (its pieces joined once), capped in bytes and in lines, and handed to sseclient whole, so its
field parser only ever sees a bounded event. sseclient itself is imported only for an event the one-line reader
does not take (``_sse_fields``).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from dashfloat.llm._errors import StreamError
from dashfloat.llm._limits import DECODED_MAX_RATIO, DECODED_RATIO_FREE_BYTES, READ_CHUNK_BYTES

# Where sseclient-py ends an event: its buffer, grown line piece by line piece, ends in a blank line.
_BOUNDARIES = (b"\r\r", b"\n\n", b"\r\n\r\n")
_TAIL_BYTES = 4


def _too_large(max_bytes: int) -> StreamError:
    return StreamError(
        "frame_too_large",
        f"the provider sent one event larger than {max_bytes // 1024} KiB; "
        "the stream was stopped: try again, or report the provider's broken framing.",
    )


def _too_many_lines(max_lines: int) -> StreamError:
    return StreamError(
        "frame_too_large",
        f"the provider sent one event of more than {max_lines} lines; "
        "the stream was stopped: try again, or report the provider's broken framing.",
    )


def framed_batches(chunks: Iterator[bytes], max_bytes: int, max_lines: int) -> Iterator[list[bytes]]:
    """Per read, the whole events it completed (each ending in its blank line; after the last read, an
    unterminated last event), built linearly. Reads that complete none give nothing.

    The boundary rule mirrors sseclient-py's own (``splitlines(True)``, ``endswith`` on the event so far),
    so no line-ending trick can make this see a boundary that sseclient would not.
    """
    pieces: list[bytes] = []
    pending = 0  # bytes of the current event
    tail = b""  # its last bytes: all that ``endswith`` looks at
    for chunk in chunks:
        if not pieces and chunk.endswith(b"\n\n") and b"\r" not in chunk and b"\n\n\n" not in chunk:
            # The common read: whole LF-framed events (a paced provider's few). Each ends at its first
            # blank line, as the loop below would find, and within both caps as the loop checks them.
            events = chunk.split(b"\n\n")[:-1]
            within = len(chunk) <= max_bytes and chunk.count(b"\n") < max_lines  # then so is each event
            if within or all(len(e) + 1 <= max_bytes and e.count(b"\n") + 1 <= max_lines for e in events):
                yield [event + b"\n\n" for event in events]
                continue
        batch: list[bytes] = []
        for piece in chunk.splitlines(True):
            pieces.append(piece)
            pending += len(piece)
            tail = (tail + piece)[-_TAIL_BYTES:]
            if tail.endswith(_BOUNDARIES):
                batch.append(b"".join(pieces))
                pieces, pending, tail = [], 0, b""
            elif pending > max_bytes or len(pieces) > max_lines:
                if batch:
                    yield batch  # the events before the oversized one, as one by one they would have come
                raise _too_large(max_bytes) if pending > max_bytes else _too_many_lines(max_lines)
        if batch:
            yield batch
    if pieces:
        yield [b"".join(pieces)]


def framed_events(chunks: Iterator[bytes], max_bytes: int, max_lines: int) -> Iterator[bytes]:
    """``framed_batches``, event by event."""
    for batch in framed_batches(chunks, max_bytes, max_lines):
        yield from batch


def _one_line_data(event: bytes) -> bool:
    """The common event, one ``data:`` line and its blank line (``data: {...}\n\n``)."""
    return event.startswith(b"data:") and event.endswith(b"\n\n") and event.count(b"\n") == 2 and b"\r" not in event


def event_datas(events: Iterator[bytes]) -> Iterator[str]:
    """The data of each whole event, as sseclient-py's field parser gives it (events without data give nothing).

    The common one-line event is read directly: sseclient would split it into lines, decode each and build an
    Event object, several microseconds per token at a paced provider's one event per token. Any other event
    (CR line endings, several lines, comments, other fields) goes through sseclient's own parser.
    """
    for event in events:
        if _one_line_data(event):
            value = event[5:-2]
            yield (value[1:] if value.startswith(b" ") else value).decode("utf-8")
        else:
            from dashfloat.llm._sse_fields import WholeEventClient  # on the first such event (its docstring)

            for parsed in WholeEventClient(iter((event,))).events():
                yield parsed.data


def one_line_datas(events: list[bytes]) -> list[bytes] | None:
    """The data of each event, still as bytes, when every one is the common one-line event (``event_datas``
    would give each of them, decoded); None when any is not."""
    if not events:
        return []
    joined = b"".join(events)
    if b"\r" in joined or joined.count(b"\n") != 2 * len(events):  # then each has two line ends, if it ends in both
        return None
    datas: list[bytes] = []
    for event in events:
        if event.startswith(b"data: ") and event.endswith(b"\n\n"):
            datas.append(event[6:-2])
        elif event.startswith(b"data:") and event.endswith(b"\n\n"):
            datas.append(event[5:-2])
        else:
            return None
    return datas


def decoded(chunks: Iterator[bytes], encoding: str) -> Iterator[bytes]:
    """``chunks`` decoded per ``Content-Encoding`` (gzip, deflate or none), at most one read's size at a time.

    Every cap downstream then applies to the decoded bytes; a body that inflates more than
    ``DECODED_MAX_RATIO`` times is stopped, so a compression bomb costs neither memory nor much CPU.
    """
    coding = encoding.strip().lower()
    if coding in ("", "identity"):
        yield from chunks
        return
    if coding not in ("gzip", "x-gzip", "deflate"):
        raise StreamError(
            "not_sse",
            f"the provider compressed its answer with {coding!r}, which DashFloat cannot read: "
            "turn compression off for this endpoint.",
        )
    # gzip: a gzip header; deflate: a zlib stream (raw deflate is tried if the zlib header is missing).
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16 if "gzip" in coding else zlib.MAX_WBITS)
    raw_fallback = coding == "deflate"
    consumed = decompressed = 0  # compressed bytes the inflater has taken, bytes it gave back
    for chunk in chunks:
        data = chunk
        while data:
            try:
                out = inflater.decompress(data, READ_CHUNK_BYTES)
            except zlib.error as exc:
                if raw_fallback and decompressed == 0:
                    raw_fallback = False
                    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise StreamError(
                    "malformed_frame",
                    f"the provider's {coding} answer is corrupt: try again; if it repeats, turn compression off.",
                ) from exc
            raw_fallback = False
            consumed += len(data) - len(inflater.unconsumed_tail)
            data = inflater.unconsumed_tail
            decompressed += len(out)
            if decompressed > DECODED_RATIO_FREE_BYTES and decompressed > DECODED_MAX_RATIO * consumed:
                raise StreamError(
                    "frame_too_large",
                    f"the provider's {coding} answer inflates more than {DECODED_MAX_RATIO} times "
                    "(a compression bomb?); the stream was stopped.",
                )
            if out:
                yield out
            if inflater.eof:
                return


SSE_FIELD_STARTS = (b"data:", b":", b"event:", b"id:", b"retry:")


def looks_like_sse(first: bytes) -> bool:
    """Whether the body's first bytes read as an event stream (for servers with a wrong Content-Type)."""
    return first.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(SSE_FIELD_STARTS)
