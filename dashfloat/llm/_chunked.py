"""HTTP/1.1 chunked transfer coding (RFC 9112 §7.1), decoded from socket reads of any size in one pass.

A paced provider sends one HTTP chunk per token. http.client decodes them one per call (a size-line read, a data
read, a CRLF read: ~10 Python calls per token); here one socket read that holds many chunks is decoded with one
regular-expression match per chunk, and their data comes out as one piece. Pure: bytes in, bytes out.
"""

from __future__ import annotations

import re
from typing import Final

from dashfloat.llm._errors import StreamError, one_line
from dashfloat.llm._limits import CHUNK_LINE_MAX_BYTES, CHUNK_SIZE_MAX_DIGITS, CHUNK_TRAILER_MAX_BYTES

# chunk-size [ chunk-ext ] line end: hex digits, optional whitespace (BWS), extensions up to the line's end.
# LF alone ends a line too (http.client reads lines to LF).
_SIZE_LINE: Final = re.compile(rb"([0-9A-Fa-f]{1,%d})[ \t]*(?:;[^\r\n]*)?\r?\n" % CHUNK_SIZE_MAX_DIGITS)

# What an incomplete size line may start with (a bad one fails at once, not when its line ends).
_SIZE_PREFIX: Final = re.compile(rb"[0-9A-Fa-f]{1,%d}(?:[ \t]*(?:;[^\r\n]*)?\r?)?\Z" % CHUNK_SIZE_MAX_DIGITS)

_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


def _malformed(what: str, line: bytes) -> StreamError:
    excerpt = one_line(line.decode("latin-1"), 60)
    return StreamError(
        "malformed_frame",
        f"the provider's HTTP chunked framing is broken ({what}: {excerpt!r}): the server or a proxy in between "
        "does not speak HTTP/1.1 correctly; try again, and report it if it repeats.",
    )


class ChunkedBody:
    """Feed it the body's bytes as they are read; ``feed`` returns the data they carried, ``done`` says the last
    chunk and its trailers arrived. Bytes after the body's end are ignored (nobody sends any before the next
    request). Broken framing sets ``error`` (StreamError "malformed_frame"), once the data before it is returned;
    a later ``feed`` raises it."""

    def __init__(self) -> None:
        self._state = _SIZE
        self._left = 0
        """Data bytes still to come in the current chunk."""
        self._pending = b""
        """An incomplete size line, chunk end or trailer line, kept for the next read."""
        self._trailer_bytes = 0
        self.error: StreamError | None = None

    @property
    def done(self) -> bool:
        return self._state == _DONE

    def feed(self, read: bytes) -> bytes:
        if self.error is not None:
            raise self.error
        parts: list[bytes] = []
        try:
            self._decode(read, parts)
        except StreamError as exc:
            self.error = exc
        return b"".join(parts) if len(parts) != 1 else parts[0]

    def _decode(self, read: bytes, parts: list[bytes]) -> None:
        data = self._pending + read if self._pending else read
        self._pending = b""
        end = len(data)
        pos = 0
        while pos < end:
            state = self._state
            if state == _SIZE:
                match = _SIZE_LINE.match(data, pos)
                if match is None:
                    pos = self._incomplete_line(data, pos, CHUNK_LINE_MAX_BYTES, "chunk size line")
                    break
                if match.end() - pos > CHUNK_LINE_MAX_BYTES:
                    raise _malformed(f"a chunk size line over {CHUNK_LINE_MAX_BYTES} bytes", data[pos : pos + 60])
                size = int(match[1], 16)
                pos = match.end()
                if size == 0:
                    self._state = _TRAILER
                    continue
                stop = pos + size
                # The common chunk: all of it and its CRLF in this read.
                if data[stop : stop + 2] == b"\r\n":
                    parts.append(data[pos:stop])
                    pos = stop + 2
                    continue
                self._left = size
                self._state = _DATA
            elif state == _DATA:
                take = min(self._left, end - pos)
                parts.append(data[pos : pos + take])
                pos += take
                self._left -= take
                if not self._left:
                    self._state = _DATA_END
            elif state == _DATA_END:
                if data.startswith(b"\r\n", pos):
                    pos += 2
                elif data.startswith(b"\n", pos):
                    pos += 1
                elif data[pos:] == b"\r":
                    self._pending = b"\r"
                    break
                else:
                    raise _malformed("no line end after a chunk's data", data[pos : pos + 60])
                self._state = _SIZE
            elif state == _TRAILER:
                newline = data.find(b"\n", pos)
                if newline < 0:
                    pos = self._incomplete_line(data, pos, CHUNK_TRAILER_MAX_BYTES - self._trailer_bytes, "trailer")
                    break
                line = data[pos:newline]
                pos = newline + 1
                if line in (b"", b"\r"):
                    self._state = _DONE
                    break
                self._trailer_bytes += len(line) + 1
                if self._trailer_bytes > CHUNK_TRAILER_MAX_BYTES:
                    raise _malformed(f"trailers over {CHUNK_TRAILER_MAX_BYTES} bytes", line)
            else:  # _DONE
                break

    def _incomplete_line(self, data: bytes, pos: int, limit: int, what: str) -> int:
        """No complete line at ``pos``: keep it for the next read, unless it is broken or over ``limit``."""
        rest = data[pos:]
        newline = rest.find(b"\n")
        if newline >= 0:  # a whole line that is no chunk-size line
            raise _malformed(f"a bad {what}", rest[:newline])
        if len(rest) > limit:
            raise _malformed(f"a {what} over {limit} bytes", rest[:60])
        if self._state == _SIZE and not _SIZE_PREFIX.match(rest):
            raise _malformed(f"a bad {what}", rest)
        self._pending = rest
        return len(data)
