"""The head-and-tail capture on its own: what is kept, what is counted, at every chunking."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dashfloat.executor._capture import HeadTail
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
