"""The chunked transfer coding decoder: against http.client's own decoder, under any split into reads, on every
bound, on broken framing (a clear provider error, never another exception); then over a real server, with hostile
endpoints (an endless chunk, a huge chunk size, a connection closed mid-chunk, a slowloris)."""

from __future__ import annotations

import http.client
import io
from collections.abc import Iterable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.llm._chunked import ChunkedBody
from dashfloat.llm._errors import StreamError
from dashfloat.llm._limits import (
    CHUNK_LINE_MAX_BYTES,
    CHUNK_SIZE_MAX_DIGITS,
    CHUNK_TRAILER_MAX_BYTES,
    SSE_FRAME_MAX_BYTES,
)
from dashfloat.testing.sse_server import BodyItem, Drop, Pause, Reply, ScriptedServer, sse_event, text_reply
from tests.llm.conftest import Llm

DONE = sse_event("[DONE]")
FINISH = sse_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})


def _content(text: str) -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


class _Socket:
    """What http.client.HTTPResponse reads a response from."""

    def __init__(self, data: bytes) -> None:
        self._file = io.BytesIO(data)

    def makefile(self, mode: str) -> io.BytesIO:
        return self._file


def reference(body: bytes) -> bytes:
    """http.client's decoding of a chunked body (what the LLM process used before)."""
    response = http.client.HTTPResponse(_Socket(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body))  # type: ignore[arg-type]
    response.begin()
    return response.read()


def decode(reads: list[bytes]) -> tuple[bytes, bool]:
    """The data and whether the body ended; a StreamError once the framing broke."""
    body = ChunkedBody()
    data = b""
    for read in reads:
        data += body.feed(read)
        if body.error is not None:
            raise body.error
    return data, body.done


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(cut, len(data)) for cut in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


# ------------------------------------------------------------------ well-formed bodies

payloads = st.lists(st.binary(min_size=1, max_size=40), max_size=8)
extensions = st.sampled_from([b"", b";a", b";a=b", b' ; name="q;x"', b"\t;x=1;y"])
trailer_lines = st.lists(st.sampled_from([b"X-Usage: 3", b"Expires: 0", b"a:"]), max_size=3)


@st.composite
def encoded(draw: st.DrawFn, line_end: bytes = b"\r\n") -> tuple[list[bytes], bytes]:
    """(payloads, their chunked body) with any legal size spelling, extensions and trailers."""
    chunks = draw(payloads)
    out = bytearray()
    for chunk in chunks:
        digits = f"{len(chunk):x}"
        digits = digits.upper() if draw(st.booleans()) else digits
        zeros = draw(st.integers(0, CHUNK_SIZE_MAX_DIGITS - len(digits)))
        out += b"0" * zeros + digits.encode() + draw(extensions) + line_end + chunk + line_end
    out += b"0" + draw(extensions) + line_end
    for trailer in draw(trailer_lines):
        out += trailer + line_end
    out += line_end
    return chunks, bytes(out)


@settings(max_examples=300, deadline=None)
@given(case=encoded(), cuts=st.lists(st.integers(0, 400), max_size=12))
def test_any_split_into_reads_gives_what_http_client_gives(case: tuple[list[bytes], bytes], cuts: list[int]) -> None:
    chunks, body = case
    assert decode(split(body, cuts)) == (reference(body), True) == (b"".join(chunks), True)


@settings(max_examples=200, deadline=None)
@given(case=encoded(line_end=b"\n"), cuts=st.lists(st.integers(0, 400), max_size=12))
def test_lf_line_ends_are_read_too(case: tuple[list[bytes], bytes], cuts: list[int]) -> None:
    chunks, body = case
    assert decode(split(body, cuts)) == (b"".join(chunks), True)


@given(case=encoded(), extra=st.binary(max_size=30))
def test_bytes_after_the_body_are_ignored(case: tuple[list[bytes], bytes], extra: bytes) -> None:
    chunks, body = case
    assert decode([body + extra]) == (b"".join(chunks), True)


def test_a_body_cut_short_is_not_done() -> None:
    body = b"5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n"
    for end in range(len(body)):
        data, done = decode([body[:end]])
        assert not done and b"hello abc".replace(b" ", b"").startswith(data)


def test_one_read_of_many_chunks_is_one_piece() -> None:
    body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in [_content(f"w{i} ") for i in range(20)])
    assert ChunkedBody().feed(body) == b"".join(_content(f"w{i} ") for i in range(20))


# ------------------------------------------------------------------ broken framing and bounds


def _fails(reads: list[bytes]) -> StreamError:
    with pytest.raises(StreamError) as caught:
        decode(reads)
    assert caught.value.kind == "malformed_frame" and "chunked framing" in caught.value.message
    return caught.value


@pytest.mark.parametrize(
    "body",
    [
        b"0x5\r\nhello\r\n",  # int() would read these: HTTP does not
        b"+5\r\nhello\r\n",
        b"-1\r\n",
        b" 5\r\nhello\r\n",
        b"5_0\r\n",
        b"\r\n",
        b"g\r\n",
        b"5\r\nhelloXY0\r\n\r\n",  # no line end after the data
        b"5\rhello\r\n",
        b'{"choices": []}\n\n',  # an SSE body without the framing it announced
    ],
)
def test_a_malformed_chunk_is_a_clear_provider_error(body: bytes) -> None:
    _fails([body])
    _fails([body[:1], body[1:]])


def test_a_bad_size_line_fails_before_its_line_ends() -> None:
    """A slowloris cannot keep an impossible size line open: its first bad byte ends it."""
    _fails([b"5", b"z"])


def test_chunk_size_digits_bound() -> None:
    """CHUNK_SIZE_MAX_DIGITS crossed: one more digit, even a leading zero, is broken framing."""
    assert decode([b"0" * (CHUNK_SIZE_MAX_DIGITS - 1) + b"1\r\nx\r\n0\r\n\r\n"]) == (b"x", True)
    _fails([b"0" * CHUNK_SIZE_MAX_DIGITS + b"1\r\nx\r\n0\r\n\r\n"])
    _fails([b"0" * CHUNK_SIZE_MAX_DIGITS, b"1"])


def test_chunk_line_bound() -> None:
    """CHUNK_LINE_MAX_BYTES crossed: a size line's extensions end there, whole or arriving in pieces."""
    at_cap = b"1;" + b"e" * (CHUNK_LINE_MAX_BYTES - 4) + b"\r\n"
    assert len(at_cap) == CHUNK_LINE_MAX_BYTES
    assert decode([at_cap + b"x\r\n0\r\n\r\n"]) == (b"x", True)
    over = b"1;" + b"e" * (CHUNK_LINE_MAX_BYTES - 3) + b"\r\n"
    _fails([over + b"x\r\n0\r\n\r\n"])
    _fails([over[:100], over[100:]])
    _fails([b"1;" + b"e" * CHUNK_LINE_MAX_BYTES])  # never ending: stopped without its line end


def test_trailer_bound() -> None:
    """CHUNK_TRAILER_MAX_BYTES crossed: trailers end there (real servers send none)."""
    line = b"X: " + b"v" * 97  # 100 bytes, 101 with its line end
    count = CHUNK_TRAILER_MAX_BYTES // 101
    assert decode([b"0\r\n" + (line + b"\n") * count + b"\r\n"]) == (b"", True)
    _fails([b"0\r\n" + (line + b"\n") * (count + 1) + b"\r\n"])
    _fails([b"0\r\n", b"t" * (CHUNK_TRAILER_MAX_BYTES + 1)])


def outcome(reads: list[bytes]) -> tuple[bytes, str]:
    """The data, then how the body ended: done, open (more to come) or the error's kind."""
    decoder = ChunkedBody()
    got = b""
    for read in reads:
        got += decoder.feed(read)
        if decoder.error is not None:
            with pytest.raises(StreamError):
                decoder.feed(b"more")  # and it stays broken
            return got, decoder.error.kind
    return got, "done" if decoder.done else "open"


@settings(max_examples=500, deadline=None)
@given(data=st.binary(max_size=120), cuts=st.lists(st.integers(0, 120), max_size=6))
def test_any_bytes_give_data_or_a_provider_error_never_another_exception(data: bytes, cuts: list[int]) -> None:
    assert outcome(split(data, cuts))[1] in ("done", "open", "malformed_frame")


@settings(max_examples=300, deadline=None)
@given(
    case=encoded(),
    garbage=st.binary(min_size=1, max_size=8),
    at=st.integers(0, 400),
    cuts=st.lists(st.integers(0, 400), max_size=8),
)
def test_a_broken_body_gives_the_same_under_any_split(
    case: tuple[list[bytes], bytes], garbage: bytes, at: int, cuts: list[int]
) -> None:
    """Damage anywhere: each split gives the same data and the same end (done, more to come, or the error)."""
    _, body = case
    broken = body[:at] + garbage + body[at:]
    whole, pieces = outcome([broken]), outcome(split(broken, cuts))
    assert pieces == whole


# ------------------------------------------------------------------ a real server, hostile endpoints


def _framed(body: Iterable[BodyItem]) -> Reply:
    return Reply(body=body, framed=True)


def _chunk(data: bytes, size_line: bytes | None = None, end: bytes = b"\r\n") -> bytes:
    return (size_line if size_line is not None else b"%x" % len(data)) + end + data + end


def test_extensions_trailers_and_lf_framing_over_a_kept_connection(llm: Llm, server: ScriptedServer) -> None:
    body = (
        _chunk(_content("with "), b"%x;name=value" % len(_content("with ")))
        + _chunk(_content("lf "), end=b"\n")
        + _chunk(FINISH + DONE, b"%X" % len(FINISH + DONE))
        + b"0;last\r\nX-Usage: 3\r\n\r\n"
    )
    server.enqueue(_framed([body]), text_reply("next"))
    assert llm.run(server.base_url).done.content == "with lf "
    assert llm.run(server.base_url).done.content == "next"
    assert server.connections == 1  # the body's end was found, so the connection went back to the pool


def test_each_token_its_own_chunk_in_many_reads(llm: Llm, server: ScriptedServer) -> None:
    tokens = [f"t{i:03d} " for i in range(200)]
    reads: list[BodyItem] = []
    for i, token in enumerate(tokens):
        reads.append(_chunk(_content(token)))
        if i % 37 == 0:
            reads.append(Pause(0.001))
    server.enqueue(_framed([*reads, _chunk(FINISH), _chunk(DONE), b"0\r\n\r\n"]))
    assert llm.run(server.base_url).done.content == "".join(tokens)


def test_a_malformed_chunk_size_is_a_provider_error(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(_framed([_chunk(_content("before ")), b"zz\r\nnonsense\r\n"]))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "malformed_frame" and "chunked framing" in failed.message
    assert failed.content == "before "


def test_connection_closed_mid_chunk_keeps_what_came(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(_framed([_chunk(_content("kept ")), b"64\r\n" + _content("x")[:20], Drop()]))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "truncated" and failed.content == "kept "


def test_a_huge_chunk_size_streams_what_it_holds(llm: Llm, server: ScriptedServer) -> None:
    """A 64-bit chunk size is never waited for: the events in it are read as they come."""
    inside = _content("inside ") + FINISH + DONE
    server.enqueue(_framed([b"f" * CHUNK_SIZE_MAX_DIGITS + b"\r\n" + inside, Pause(60)]))
    assert llm.run(server.base_url, timeout_s=30).done.content == "inside "


def _endless() -> Iterator[BodyItem]:
    yield b"f" * CHUNK_SIZE_MAX_DIGITS + b"\r\n" + b"data: "
    while True:
        yield b"x" * 65536  # no event ever ends


def test_an_endless_chunk_stops_at_the_frame_cap(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(_framed(_endless()))
    failed = llm.run(server.base_url, timeout_s=30).failed
    assert failed.kind == "frame_too_large" and f"{SSE_FRAME_MAX_BYTES // 1024} KiB" in failed.message


def _slowloris() -> Iterator[BodyItem]:
    yield _chunk(_content("first "))
    yield b"1;"
    for _ in range(3000):  # a size line's extension, a byte at a time, for minutes
        yield Pause(0.05)
        yield b"e"


def test_a_slowloris_is_held_to_the_idle_timeout(llm: Llm, server: ScriptedServer) -> None:
    """Bytes that carry no event (here a chunk-size line arriving a byte at a time) move no deadline."""
    server.enqueue(_framed(_slowloris()))
    failed = llm.run(server.base_url, timeout_s=60, idle_timeout_s=1.0).failed
    assert failed.kind == "idle_timeout" and failed.content == "first "
