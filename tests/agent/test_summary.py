"""The outcome row: the status is the result's member, the excerpt at most 30 lines, verbatim, errors first."""

from __future__ import annotations

from dashfloat.agent import RESULT_EXCERPT_MAX_LINES, result_excerpt, result_status
from dashfloat.agent._summary import RESULT_EXCERPT_HEAD_LINES, RESULT_EXCERPT_MAX_LINE_CHARS
from dashfloat.executor._capture import HeadTail
from dashfloat.protocol import (
    CapturedOutput,
    CommandExited,
    CommandTimedOut,
    DirectoryEntry,
    EditFileResult,
    ListDirectoryResult,
    ReadFileResult,
    ToolCancelled,
    ToolFailed,
    ToolRejected,
    WriteFileResult,
)


def read(content: str) -> ReadFileResult:
    return ReadFileResult(path="a", content=content, offset=1, lines=1, total_lines=1, total_bytes=1, truncated=False)


def output(text: str) -> CapturedOutput:
    return CapturedOutput(output=text, truncated=False, total_bytes=len(text))


def test_the_excerpt_stops_at_30_lines_with_head_and_tail_and_says_how_many_more() -> None:
    at_bound = "\n".join(f"l{i}" for i in range(RESULT_EXCERPT_MAX_LINES))
    assert result_excerpt(read(at_bound)) == at_bound
    over = at_bound + "\nl30\nl31"
    lines = result_excerpt(CommandExited(exit_code=0, output=output(over))).splitlines()
    assert len(lines) == RESULT_EXCERPT_MAX_LINES  # the marker is one of the 30
    tail = RESULT_EXCERPT_MAX_LINES - 1 - RESULT_EXCERPT_HEAD_LINES
    assert lines[:RESULT_EXCERPT_HEAD_LINES] == [f"l{i}" for i in range(RESULT_EXCERPT_HEAD_LINES)]
    assert lines[RESULT_EXCERPT_HEAD_LINES] == "… 3 more lines"
    assert lines[-tail:] == [f"l{i}" for i in range(32 - tail, 32)]  # the end: a test run's summary


def test_the_count_includes_what_the_executor_cut_from_the_middle() -> None:
    """Issue 37: 20 001 lines were said to be `… 5925 more`; the lines the executor's marker stands for count too."""
    head = [str(i) for i in range(1, 101)]
    tail = [str(i) for i in range(19_902, 20_002)]
    first = len("\n".join(head).encode()) + 1  # the head ends at a line's end
    marker = f"[… output cut: 99999 bytes (19801 lines) not shown here; the first {first} and the last 2 bytes …]"
    kept = CapturedOutput(
        output="\n".join([*head, marker, *tail]), truncated=True, total_bytes=3, cut_bytes=99999, cut_lines=19801
    )
    lines = result_excerpt(CommandExited(exit_code=0, output=kept)).splitlines()
    shown = RESULT_EXCERPT_MAX_LINES - 1
    assert lines[RESULT_EXCERPT_HEAD_LINES] == f"… {20_001 - shown} more lines"
    assert lines[-1] == "20001"


def test_the_count_is_exact_from_a_real_capture_whether_or_not_the_cut_splits_a_line() -> None:
    for head_max in (100, 101, 102):  # "…\n34\n35…": the head ends inside a line, or right at its end
        capture = HeadTail(head_max=head_max, tail_max=200)
        text = "".join(f"{i}\n" for i in range(1, 201)) + "FINAL SUMMARY: 3 failed\n"
        capture.feed(text.encode())
        kept = CapturedOutput(
            output=capture.text(), truncated=True, total_bytes=capture.total, cut_bytes=capture.cut_bytes,
            cut_lines=capture.cut_lines,
        )  # fmt: skip
        lines = result_excerpt(CommandExited(exit_code=0, output=kept)).splitlines()
        assert lines[RESULT_EXCERPT_HEAD_LINES] == f"… {201 - (RESULT_EXCERPT_MAX_LINES - 1)} more lines", head_max
        assert lines[-1] == "FINAL SUMMARY: 3 failed"


def test_one_long_line_is_cut() -> None:
    excerpt = result_excerpt(read("x" * (RESULT_EXCERPT_MAX_LINE_CHARS + 50)))
    assert excerpt == "x" * RESULT_EXCERPT_MAX_LINE_CHARS


def test_errors_lead_and_statuses_are_named() -> None:
    timed_out = CommandTimedOut(timeout_s=30, output=output("partial"))
    assert result_excerpt(timed_out) == "timed out after 30s\npartial" and result_status(timed_out) == "error"
    assert result_excerpt(CommandTimedOut(timeout_s=0.5, output=output(""))) == "timed out after 0.5s"
    assert result_excerpt(ToolFailed(error="file not found: a")) == "file not found: a"
    assert result_status(ToolRejected()) == "rejected" and result_excerpt(ToolRejected()) == ""
    assert result_status(ToolCancelled()) == "cancelled"
    assert result_excerpt(ToolCancelled(output=output("so far\n"))) == "so far"
    entries = [
        DirectoryEntry(name="src", type="dir", size=0),
        DirectoryEntry(name="a", type="file", size=3),
        DirectoryEntry(name="link", type="symlink", size=4),  # found in tmux: it read as a 4-byte file
    ]
    listing = ListDirectoryResult(path=".", entries=entries, total=3, truncated=False)
    assert result_excerpt(listing) == "src/  0\na  3\nlink@  4" and result_status(listing) == "ok"


def test_a_command_is_ok_only_when_it_exits_zero() -> None:
    assert result_status(CommandExited(exit_code=0, output=output("ok"))) == "ok"
    assert result_status(CommandExited(exit_code=1, output=output("no"))) == "error"
    assert result_status(CommandExited(exit_code=137, output=output(""), signal="SIGKILL")) == "error"
    assert result_status(WriteFileResult(path="a", bytes=1, created=True)) == "ok"
    assert result_status(EditFileResult(path="a", line=1, bytes=1)) == "ok"
    assert result_excerpt(WriteFileResult(path="a", bytes=1, created=True)) == ""


def test_a_failed_command_leads_with_its_exit_code_or_signal() -> None:
    """Found in tmux: `exit 3` showed as `→ error: out`, the code nowhere on screen."""
    assert result_excerpt(CommandExited(exit_code=3, output=output("out\nerr\n"))) == "exit code 3\nout\nerr"
    assert result_excerpt(CommandExited(exit_code=1, output=output(""))) == "exit code 1"
    assert result_excerpt(CommandExited(exit_code=137, output=output("x"), signal="SIGKILL")) == "killed by SIGKILL\nx"
    assert result_excerpt(CommandExited(exit_code=0, output=output("fine\n"))) == "fine"
