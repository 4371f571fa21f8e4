"""The head-and-tail capture on its own: what is kept, what is counted, at every chunking."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dashfloat.executor._capture import HeadTail, LiveTail
from dashfloat.executor._limits import EXEC_OUTPUT_HEAD_BYTES, EXEC_OUTPUT_MAX_BYTES, EXEC_OUTPUT_TAIL_BYTES


def test_the_split_keeps_32_kib_and_most_of_it_for_the_end() -> None:
    assert EXEC_OUTPUT_HEAD_BYTES + EXEC_OUTPUT_TAIL_BYTES == EXEC_OUTPUT_MAX_BYTES
    assert EXEC_OUTPUT_TAIL_BYTES > EXEC_OUTPUT_HEAD_BYTES


def capture(data: bytes, cuts: list[int], head: int, tail: int) -> HeadTail:
    captured = HeadTail(head, tail)
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        captured.feed(data[start:cut])
        start = max(start, cut)
    captured.feed(data[start:])
    return captured


@given(
    data=st.binary(max_size=400).map(lambda b: b.replace(b"\x80", b"\n")),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
    head=st.integers(min_value=0, max_value=50),
    tail=st.integers(min_value=1, max_value=80),
)
def test_head_and_tail_are_kept_and_the_middle_is_counted(data: bytes, cuts: list[int], head: int, tail: int) -> None:
    captured = capture(data, cuts, head, tail)
    assert captured.total == len(data)
    if len(data) <= head + tail:
        assert not captured.truncated and captured.cut_bytes == 0
        assert captured.text() == data.decode("utf-8", "replace")
        return
    assert captured.truncated
    assert bytes(captured.head) == data[:head] and bytes(captured.tail) == data[-tail:]
    assert captured.cut_bytes == len(data) - head - tail
    assert captured.cut_lines == data[head : len(data) - tail].count(b"\n")
    assert len(captured.head) + len(captured.tail) <= head + tail


def test_the_marker_sits_on_its_own_line_and_names_the_cut() -> None:
    data = b"".join(b"line %d\n" % i for i in range(100))
    captured = HeadTail(20, 30)
    captured.feed(data)
    lines = captured.text().splitlines()
    assert lines[0] == "line 0" and lines[-1] == "line 99"
    [marker] = [line for line in lines if line.startswith("[…")]
    cut, cut_lines = len(data) - 50, data[20:-30].count(b"\n")
    assert marker == (
        f"[… output cut: {cut} bytes ({cut_lines} lines) not shown here; "
        f"the first 20 and the last 30 of {len(data)} bytes are shown …]"
    )


def test_a_character_split_by_the_cut_is_dropped_not_mangled() -> None:
    captured = HeadTail(3, 5)
    captured.feed(("aaé" + "x" * 20 + "éééé").encode())
    text = captured.text()
    assert "\ufffd" not in text
    assert text.startswith("aa\n[… output cut:") and text.endswith("…]\néé")


def test_live_chunks_are_rate_limited_and_bounded() -> None:
    live = LiveTail(max_bytes=10, interval_s=1.0)
    assert live.wait_s(0.0) is None and live.take(0.0) is None
    live.feed(b"abc")
    assert live.take(0.0) == ("abc", 0)
    live.feed(b"def")
    assert live.wait_s(0.5) == 0.5 and live.take(0.5) is None  # one chunk per interval
    live.feed(b"0123456789XY")  # more than max_bytes arrived: the newest are kept, the rest counted
    assert live.take(1.0) == ("23456789XY", 5)
    live.feed(b"x" * 100_000)
    assert live.take(2.0) == ("x" * 10, 99_990)


def test_a_live_chunk_never_splits_a_character() -> None:
    live = LiveTail(max_bytes=100, interval_s=0.0)
    data = "é€".encode()
    live.feed(data[:3])  # é and the first byte of €
    assert live.take(0.0) == ("é", 0)
    live.feed(data[3:])
    assert live.take(1.0) == ("€", 0)


@given(
    data=st.binary(max_size=300),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=10),
)
def test_live_text_is_all_of_the_output_when_nothing_is_skipped(data: bytes, cuts: list[int]) -> None:
    live = LiveTail(max_bytes=1000, interval_s=0.0)
    got: list[str] = []
    start = 0
    for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
        live.feed(data[start:cut])
        start = max(start, cut)
        taken = live.take(float(cut))
        if taken is not None:
            got.append(taken[0])
            assert taken[1] == 0
    held = bytes(live.pending).decode("utf-8", "replace")  # an incomplete character at the very end
    assert "".join(got) + held == data.decode("utf-8", "replace")
