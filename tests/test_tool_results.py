"""The JSON the model reads for every tool result, pinned byte for byte (docs/tools.md, seed record 0007)."""

from __future__ import annotations

import json
import typing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashfloat.protocol import (
    CapturedOutput,
    CommandExited,
    CommandTimedOut,
    DirectoryEntry,
    EditFileResult,
    JobReport,
    ListDirectoryResult,
    McpToolResult,
    ReadFileResult,
    ToolCancelled,
    ToolFailed,
    ToolRejected,
    ToolResult,
    WriteFileResult,
    result_json,
)

OUT = CapturedOutput(output="out\nerr\n", truncated=False, total_bytes=8)

# One example of every shape docs/tools.md documents, and the exact bytes the model gets for it.
PINNED: list[tuple[ToolResult, str]] = [
    (
        ReadFileResult(
            path="src/calc.py",
            content="def add(a, b):\n    return a - b\n",
            offset=1,
            lines=2,
            total_lines=2,
            total_bytes=32,
            truncated=False,
        ),
        '{"ok":true,"path":"src/calc.py","content":"def add(a, b):\\n    return a - b\\n","offset":1,"lines":2,'
        '"total_lines":2,"total_bytes":32,"truncated":false}',
    ),
    (
        ReadFileResult(
            path="big.log", content="x\n", offset=3, lines=1, total_lines=None, total_bytes=9, truncated=True
        ),
        '{"ok":true,"path":"big.log","content":"x\\n","offset":3,"lines":1,"total_lines":null,"total_bytes":9,'
        '"truncated":true}',
    ),
    (
        WriteFileResult(path="tests/test_calc.py", bytes=25, created=True),
        '{"ok":true,"path":"tests/test_calc.py","bytes":25,"created":true}',
    ),
    (
        EditFileResult(path="src/calc.py", line=2, bytes=32),
        '{"ok":true,"path":"src/calc.py","line":2,"bytes":32}',
    ),
    (
        ListDirectoryResult(
            path=".",
            entries=[
                DirectoryEntry(name="caf\\xe9.txt", type="file", size=1, escaped=True),
                DirectoryEntry(name="leak", type="symlink", size=11),
                DirectoryEntry(name="src", type="dir", size=4096),
            ],
            total=3,
            truncated=False,
        ),
        '{"ok":true,"path":".","entries":[{"name":"caf\\\\xe9.txt","type":"file","size":1,"escaped":true},'
        '{"name":"leak","type":"symlink","size":11},{"name":"src","type":"dir","size":4096}],"total":3,'
        '"truncated":false}',
    ),
    (
        CommandExited(exit_code=0, output=CapturedOutput(output="fine\n", truncated=False, total_bytes=5)),
        '{"ok":true,"exit_code":0,"output":"fine\\n","truncated":false,"total_bytes":5}',
    ),
    (
        CommandExited(exit_code=3, output=OUT),
        '{"ok":false,"exit_code":3,"output":"out\\nerr\\n","truncated":false,"total_bytes":8}',
    ),
    (
        CommandExited(exit_code=137, output=CapturedOutput("", False, 0), signal="SIGKILL"),
        '{"ok":false,"exit_code":137,"output":"","truncated":false,"total_bytes":0,"signal":"SIGKILL"}',
    ),
    (
        CommandExited(
            exit_code=0,
            output=CapturedOutput(
                output="aaaa\n[output truncated: first 4 of 1073741824 bytes shown]",
                truncated=True,
                total_bytes=1 << 30,
            ),
        ),
        '{"ok":true,"exit_code":0,"output":"aaaa\\n[output truncated: first 4 of 1073741824 bytes shown]",'
        '"truncated":true,"total_bytes":1073741824}',
    ),
    (
        CommandTimedOut(timeout_s=30, output=CapturedOutput("before\n", False, 7)),
        '{"ok":false,"error":"timed out after 30s","output":"before\\n","truncated":false,"total_bytes":7}',
    ),
    (
        CommandTimedOut(timeout_s=0.5, output=CapturedOutput("", False, 0), exit_code=0),
        '{"ok":false,"error":"timed out after 0.5s","output":"","truncated":false,"total_bytes":0,"exit_code":0}',
    ),
    (
        ToolCancelled(output=CapturedOutput("started\n", False, 8)),
        '{"ok":false,"cancelled":true,"output":"started\\n","truncated":false,"total_bytes":8}',
    ),
    (ToolCancelled(), '{"ok":false,"cancelled":true}'),
    (  # a background job read by job_output (ADR 0080): its cursor goes back in the next call
        JobReport(
            job_id=1, state="running", output=CapturedOutput("listening on 8000\n", False, 18), cursor=18, ready=True
        ),
        '{"ok":true,"job_id":1,"state":"running","ready":true,"output":"listening on 8000\\n","truncated":false,'
        '"total_bytes":18,"cursor":18}',
    ),
    (
        JobReport(job_id=2, state="exited", output=CapturedOutput("", False, 0), cursor=40, exit_code=1),
        '{"ok":false,"job_id":2,"state":"exited","exit_code":1,"output":"","truncated":false,"total_bytes":0,'
        '"cursor":40}',
    ),
    (  # an MCP tool's text (ADR 0086); the server's isError is ok:false
        McpToolResult(text="boom", is_error=True),
        '{"ok":false,"content":"boom","truncated":false,"total_bytes":0}',
    ),
    (
        McpToolResult(text="a…b", truncated=True, total_bytes=40000),
        '{"ok":true,"content":"a…b","truncated":true,"total_bytes":40000}',
    ),
    (ToolRejected(), '{"ok":false,"rejected":true}'),
    (
        ToolFailed(error="path escapes the working directory: leak (through a symlink)"),
        '{"ok":false,"error":"path escapes the working directory: leak (through a symlink)"}',
    ),
]


@pytest.mark.parametrize(
    ("result", "expected"), PINNED, ids=lambda x: type(x).__name__ if not isinstance(x, str) else ""
)
def test_the_model_reads_exactly_the_documented_bytes(result: ToolResult, expected: str) -> None:
    assert result_json(result) == expected


def test_every_member_of_the_union_is_pinned() -> None:
    assert {type(result) for result, _ in PINNED} == set(typing.get_args(ToolResult))


def test_the_union_tag_never_reaches_the_model() -> None:
    for result, _ in PINNED:
        assert "type" not in json.loads(result_json(result))


@given(
    exit_code=st.integers(0, 255),
    text=st.text(max_size=40),
    truncated=st.booleans(),
    total=st.integers(0, 2**40),
)
def test_ok_is_true_exactly_for_exit_code_zero(exit_code: int, text: str, truncated: bool, total: int) -> None:
    seen = json.loads(result_json(CommandExited(exit_code, CapturedOutput(text, truncated, total))))
    assert seen == {
        "ok": exit_code == 0,
        "exit_code": exit_code,
        "output": text,
        "truncated": truncated,
        "total_bytes": total,
    }
