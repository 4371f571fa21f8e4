"""The parsing fast paths give exactly what the general paths give: the typed content-only chunk reader of
Episode.feed against the generic-dict walk, and the one-line SSE event reader against sseclient-py's parser."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.llm import Episode
from dashfloat.llm._errors import StreamError
from dashfloat.llm._framing import (
    _BOUNDARIES,
    _TAIL_BYTES,
    _too_large,
    _too_many_lines,
    event_datas,
    framed_events,
    one_line_datas,
)
from dashfloat.llm._limits import EPISODE_MAX_BYTES, REPEAT_MIN_COUNT
from dashfloat.llm._sse_fields import WholeEventClient
from dashfloat.protocol import StreamDone, StreamFailed


def _declines(data: str | bytes) -> str | None:
    return None


class GeneralEpisode(Episode):
    """The reference: every chunk goes through the generic-dict path."""

    content_only = staticmethod(_declines)


Outcome = tuple[str, Any]


def _fed(episode: Episode, data: str) -> Outcome:
    try:
        return ("deltas", episode.feed(data))
    except StreamError as exc:
        return ("error", (exc.kind, exc.message))


def _end(episode: Episode) -> tuple[Any, ...]:
    try:
        finished: StreamDone | str = episode.finished(7, text_calls=True)
    except StreamError as exc:
        finished = exc.kind
    try:
        failed: StreamFailed | str = episode.failed(7, "internal", "m")
    except Exception as exc:  # compared, not hidden
        failed = type(exc).__name__
    return (episode.content, episode.emitted, episode.done, episode.finish_reason, episode.usage, finished, failed)


def assert_same(events: list[str]) -> Episode:
    """Feed both episodes the same events; each step and the end must agree. Returns the fast one."""
    fast, general = Episode(), GeneralEpisode()
    for data in events:
        got, want = _fed(fast, data), _fed(general, data)
        assert got == want, data
        if got[0] == "error":
            break
    assert _end(fast) == _end(general)
    return fast


texts = st.sampled_from(["", "hi", "w00001 ", "é ☃", "\u2028", "0123456789abcdef0123456789abcdef01234567", "x" * 300])
anything = st.none() | st.booleans() | st.integers(-2, 2) | texts | st.lists(st.integers(), max_size=2)
fragment = st.fixed_dictionaries(
    {"index": st.integers(0, 2)},
    optional={"id": st.sampled_from(["c1", "c2", "", None]), "function": st.just({"name": "read_file"})},
)
delta_extras = {
    "role": st.sampled_from(["assistant", None, 3]),
    "reasoning_content": texts | st.none(),
    "reasoning": texts | st.none(),
    "tool_calls": st.none() | st.just([]) | st.lists(fragment, min_size=1, max_size=2) | st.just({"x": 1}),
    "refusal": st.none(),
}
deltas = st.fixed_dictionaries({"content": texts}, optional=delta_extras) | st.fixed_dictionaries(
    {}, optional={"content": texts | anything, **delta_extras}
)
choice_extras = {
    "index": st.integers(0, 1),
    "finish_reason": st.sampled_from([None, "", "stop", "length", "tool_calls", "error", 1]),
    "logprobs": st.none(),
    "error": st.sampled_from([None, "overloaded", {"message": "boom"}]),
}
choices = st.fixed_dictionaries({"delta": deltas}, optional=choice_extras) | st.fixed_dictionaries(
    {}, optional={"delta": deltas | anything, **choice_extras}
)
chunk_extras = {
    "id": st.just("chatcmpl-1"),
    "object": st.just("chat.completion.chunk"),
    "created": st.integers(0, 2**40),
    "model": st.just("m"),
    "usage": st.none() | st.just({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}) | anything,
    "x_groq": st.none() | st.just({"id": "g"}) | st.just({"usage": {"prompt_tokens": 1}}),
    "error": st.sampled_from([None, "bad", {"message": "context length exceeded", "code": 400}]),
}
chunks = st.fixed_dictionaries(
    {"choices": st.lists(choices, min_size=1, max_size=2)}, optional=chunk_extras
) | st.fixed_dictionaries({}, optional={"choices": st.lists(choices | anything, max_size=2) | anything, **chunk_extras})
event_data = (
    chunks.map(lambda c: json.dumps(c, ensure_ascii=False))
    | chunks.map(json.dumps)
    | st.sampled_from(["[DONE]", " [DONE] ", "", "not json", "[1, 2]", "null", '{"choices": [', '"s"', "[" * 2000])
)


@settings(max_examples=400, deadline=None)
@given(events=st.lists(event_data, max_size=12))
def test_the_fast_chunk_reader_gives_what_the_general_path_gives(events: list[str]) -> None:
    assert_same(events)


def _content(text: str, **extra: Any) -> str:
    return json.dumps(
        {"id": "x", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}], **extra}
    )


def test_the_common_chunk_takes_the_fast_path() -> None:
    # Pins that the fast path is in use for the shapes real providers send on every token (with the null
    # fields OpenAI, DeepSeek and Groq add), not only that it agrees when it is.
    plain = _content("w1 ")
    openai = _content("w1 ", usage=None, system_fingerprint="fp")
    deepseek = json.dumps({"choices": [{"delta": {"content": "w1 ", "reasoning_content": None}}]})
    groq = json.dumps({"choices": [{"delta": {"content": "w1 ", "tool_calls": []}}], "x_groq": None})
    for data in (plain, openai, deepseek, groq):
        assert Episode.content_only(data) == "w1 "
    for data in (
        _content("w1 ", usage={"prompt_tokens": 1}),
        json.dumps({"choices": [{"delta": {"content": "a", "reasoning": "think"}}]}),
        json.dumps({"choices": [{"delta": {"content": "a"}, "finish_reason": "stop"}]}),
        json.dumps({"error": {"message": "boom"}}),
        '{"choices": [',
    ):
        assert Episode.content_only(data) is None


def test_a_loop_and_the_size_bound_end_both_paths_alike() -> None:
    loop = [_content("0123456789abcdef0123456789abcdef ")] * (REPEAT_MIN_COUNT * 2)
    episode = assert_same([_content("start "), *loop])
    assert episode.failed(1, "repeating", "m").content.count("0123456789abcdef") == 2  # one copy of the span
    # 1 MiB each (é is 2 bytes): the bound is reached exactly, then crossed by the last
    big = [_content("y" * (1024 * 1024 - 2) + "é")] * (EPISODE_MAX_BYTES // (1024 * 1024) + 1)
    assert_same(big)
    episode = Episode()
    outcomes = [_fed(episode, data)[0] for data in big]
    assert outcomes == ["deltas"] * (len(big) - 1) + ["error"]
    assert episode.failed(1, "episode_too_large", "m").content == "".join(
        json.loads(d)["choices"][0]["delta"]["content"] for d in big[:-1]
    )


# -------------------------------------------------------------------- SSE events

fields = st.sampled_from([b"data:", b"data: ", b"data:  ", b"event: ", b"id:", b"retry: 5", b":", b"", b"dat"])
values = st.sampled_from(
    [b"", b"{}", b"[DONE]", b" ", b"x:y", b"\xff", "é".encode(), "\u2028".encode(), b"\x85", b"\r"]
)
endings = st.sampled_from([b"\n", b"\r", b"\r\n"])
lines = st.tuples(fields, values, endings).map(b"".join)
events = st.tuples(st.lists(lines, min_size=1, max_size=3), endings).map(lambda e: b"".join(e[0]) + e[1])
bodies = st.lists(events | lines | values, max_size=8).map(b"".join)


def _datas(events: list[bytes], fast: bool) -> tuple[list[str], str | None]:
    got: list[str] = []
    try:
        if fast:
            got.extend(event_datas(iter(events)))
        else:
            got.extend(event.data for event in WholeEventClient(iter(events)).events())
    except UnicodeDecodeError as exc:
        return got, type(exc).__name__
    return got, None


@settings(max_examples=400, deadline=None)
@given(body=bodies)
def test_the_one_line_event_reader_gives_what_sseclient_gives(body: bytes) -> None:
    events = list(framed_events(iter([body]), 1 << 20, 1 << 20))
    assert _datas(events, fast=True) == _datas(events, fast=False)


def test_one_line_events_with_and_without_the_space() -> None:
    events = [b"data: {}\n\n", b"data:[DONE]\n\n", b"data:  two\n\n", b"data:\n\n", b"data: \xc3\xa9\n\n"]
    assert list(event_datas(iter(events))) == ["{}", "[DONE]", " two", "", "é"]
    assert [msgspec.json.decode(data) for data in event_datas(iter([b'data: {"a": 1}\n\n']))] == [{"a": 1}]


def reference_framed_events(chunks: list[bytes], max_bytes: int, max_lines: int) -> Iterator[bytes]:
    """framed_events as it was before its fast path for whole LF-framed reads: every piece through the loop."""
    pieces: list[bytes] = []
    pending = 0
    tail = b""
    for chunk in chunks:
        for piece in chunk.splitlines(True):
            pieces.append(piece)
            pending += len(piece)
            tail = (tail + piece)[-_TAIL_BYTES:]
            if tail.endswith(_BOUNDARIES):
                yield b"".join(pieces)
                pieces, pending, tail = [], 0, b""
            elif pending > max_bytes:
                raise _too_large(max_bytes)
            elif len(pieces) > max_lines:
                raise _too_many_lines(max_lines)
    if pieces:
        yield b"".join(pieces)


def _framed(chunks: list[bytes], max_bytes: int, max_lines: int, fast: bool) -> tuple[list[bytes], str | None]:
    got: list[bytes] = []
    try:
        if fast:
            got.extend(framed_events(iter(chunks), max_bytes, max_lines))
        else:
            got.extend(reference_framed_events(chunks, max_bytes, max_lines))
    except StreamError as exc:
        return got, exc.message
    return got, None


lf_values = st.sampled_from([b"", b"{}", b"x", b"[DONE]", "é".encode()])
lf_lines = st.tuples(fields, lf_values).map(lambda line: b"".join(line) + b"\n")
lf_events = st.lists(lf_lines, min_size=1, max_size=4).map(lambda event: b"".join(event) + b"\n")
lf_reads = st.lists(lf_events | lf_lines | st.just(b"\n"), min_size=1, max_size=4).map(
    b"".join
)  # the fast path's reads
reads = st.lists(lines | events | values, max_size=4).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(
    chunks=st.lists(lf_reads | reads, max_size=6),
    max_bytes=st.integers(1, 40),
    max_lines=st.integers(1, 5),
)
def test_whole_event_reads_are_framed_as_the_piece_loop_frames_them(
    chunks: list[bytes], max_bytes: int, max_lines: int
) -> None:
    assert _framed(chunks, max_bytes, max_lines, fast=True) == _framed(chunks, max_bytes, max_lines, fast=False)


def test_a_read_of_whole_events_takes_the_fast_path_within_the_caps() -> None:
    read = b'data: {"a": 1}\n\ndata: two\ndata: lines\n\n\n\n'
    assert list(framed_events(iter([read]), 1 << 20, 256)) == [
        b'data: {"a": 1}\n\n',
        b"data: two\ndata: lines\n\n",
        b"\n\n",
    ]
    assert _framed([read], 20, 256, fast=True) == ([b'data: {"a": 1}\n\n'], _too_large(20).message)
    assert _framed([read], 1 << 20, 1, fast=True) == ([b'data: {"a": 1}\n\n'], _too_many_lines(1).message)
    # a third line end is the next event's first line: the read is not split at it
    odd = [b"data: x\n\n\n", b"data: y\n\n"]
    assert _framed(odd, 1 << 20, 256, fast=True) == ([b"data: x\n\n", b"\ndata: y\n\n"], None)


# -------------------------------------------------------------------- a read's events at once


@settings(max_examples=400, deadline=None)
@given(body=bodies)
def test_a_reads_one_line_datas_are_what_event_datas_gives(body: bytes) -> None:
    events = list(framed_events(iter([body]), 1 << 20, 1 << 20))
    datas = one_line_datas(events)
    if datas is None:
        return
    want, error = _datas(events, fast=False)
    if all(_utf8(data) for data in datas):
        assert ([data.decode("utf-8") for data in datas], None) == (want, error)
    else:
        assert error == "UnicodeDecodeError"  # which the one-by-one path then raises


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_one_line_datas_declines_any_other_event() -> None:
    assert one_line_datas([b"data: a\n\n", b"data:b\n\n"]) == [b"a", b"b"]
    for other in (b": keep-alive\n\n", b"data: a\ndata: b\n\n", b"data: a\r\n\r\n", b"event: x\n\n", b"data: a"):
        assert one_line_datas([b"data: a\n\n", other]) is None


def _fed_one_by_one(episode: Episode, datas: list[bytes]) -> tuple[str, Outcome | None]:
    """The text of the deltas feeding ``datas`` one by one gives, and the error it ends in."""
    text = ""
    for data in datas:
        try:
            text += "".join(t for _, t in episode.feed(data.decode("utf-8")))
        except StreamError as exc:
            return text, ("error", (exc.kind, exc.message))
        except UnicodeDecodeError:
            return text, ("error", "utf-8")
    return text, None


def _fed_at_once(episode: Episode, datas: list[bytes]) -> tuple[str, Outcome | None] | None:
    fed = episode.feed_plain(datas)
    if fed is None:
        return None
    deltas, error = fed
    assert all(kind == "content" for kind, _ in deltas) and len(deltas) <= 1
    return "".join(t for _, t in deltas), None if error is None else ("error", (error.kind, error.message))


loop_text = "0123456789abcdef0123456789abcdef "
plain_texts = st.sampled_from(["", "w00001 ", "é ☃", "\u2028", loop_text, "x" * 300, "y" * 520])
plain_datas = st.lists(
    plain_texts.map(lambda t: _content(t).encode())
    | st.sampled_from([_content(loop_text).encode()] * 3 + [b"[DONE]", b"{}", b'{"choices": []}', b"\xff"])
    | chunks.map(lambda c: json.dumps(c).encode()),
    max_size=20,
)


@settings(max_examples=150, deadline=None)
@given(batches=st.lists(plain_datas, max_size=6))
def test_a_reads_events_at_once_give_what_one_by_one_gives(batches: list[list[bytes]]) -> None:
    """Reads of events through feed_plain (or, when it declines, one by one) against every event one by one:
    the same text, the same error, the same episode at the end (the repetition guard looks where it would)."""
    at_once, one_by_one = Episode(), GeneralEpisode()
    text_at_once = text_one_by_one = ""
    end_at_once: Outcome | None = None
    end_one_by_one: Outcome | None = None
    for datas in batches:
        fed = _fed_at_once(at_once, datas)
        if fed is None:
            fed = _fed_one_by_one(at_once, datas)
        text_at_once += fed[0]
        end_at_once = fed[1]
        got = _fed_one_by_one(one_by_one, datas)
        text_one_by_one += got[0]
        end_one_by_one = got[1]
        assert (text_at_once, end_at_once) == (text_one_by_one, end_one_by_one)
        if end_at_once is not None:
            break
    assert _end(at_once) == _end(one_by_one)


def test_feed_plain_takes_plain_reads_and_declines_others() -> None:
    plain = [_content(f"w{i} ").encode() for i in range(20)]
    episode = Episode()
    assert episode.feed_plain(plain) == ([("content", "".join(f"w{i} " for i in range(20)))], None)
    assert episode.feed_plain([*plain, b"[DONE]"]) is None
    assert episode.content == "".join(f"w{i} " for i in range(20))  # a declined read took nothing
    assert GeneralEpisode().feed_plain(plain) is None


def test_a_loop_found_at_once_ends_where_one_by_one_ends() -> None:
    loop = [_content(loop_text).encode()] * (REPEAT_MIN_COUNT * 2)
    at_once, one_by_one = Episode(), GeneralEpisode()
    fed = at_once.feed_plain([_content("start ").encode(), *loop])
    assert fed is not None and fed[1] is not None and fed[1].kind == "repeating"
    assert (fed[0][0][1], ("error", (fed[1].kind, fed[1].message))) == _fed_one_by_one(
        one_by_one, [_content("start ").encode(), *loop]
    )
    assert _end(at_once) == _end(one_by_one)


def test_the_size_bound_inside_a_read_is_left_to_one_by_one() -> None:
    big = [_content("y" * (1024 * 1024 - 2) + "é").encode()] * (EPISODE_MAX_BYTES // (1024 * 1024) + 1)
    assert Episode().feed_plain(big) is None
    assert Episode().feed_plain(big[:-1]) is not None  # exactly at the bound
