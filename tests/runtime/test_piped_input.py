"""Piped input: `git diff | dashfloat -p "review this"` sends the diff; an open, silent stdin never hangs a run."""

from __future__ import annotations

import os
import pty
import subprocess
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashfloat.catalogue import EXEC_OUTPUT_MAX_BYTES
from dashfloat.executor import HeadTail
from dashfloat.piped_input import (
    STDIN_FIRST_BYTE_WAIT_S,
    STDIN_PROMPT_MAX_BYTES,
    STDIN_READ_MAX_BYTES,
    PipedInput,
    is_piped,
    read_piped,
    with_piped,
)
from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.e2e import dashfloat_argv, isolated_environment


def piped(
    server: ScriptedServer, tree: Path, tmp_path: Path, stdin: bytes, *args: str
) -> subprocess.CompletedProcess[bytes]:
    """The real CLI with ``stdin`` piped in, to its end."""
    argv = dashfloat_argv(server, tree, *args)
    return subprocess.run(
        argv, env=isolated_environment(tmp_path), input=stdin, capture_output=True, timeout=60, check=False
    )


def user_content(server: ScriptedServer) -> str:
    [user] = [m for m in server.requests[0]["messages"] if m["role"] == "user"]
    content = user["content"]
    assert isinstance(content, str)
    return content


def test_the_prompt_is_followed_by_the_piped_text_in_a_block() -> None:
    assert with_piped("review this", PipedInput("-old\n+new\n", stopped=False)) == (
        "review this\n\n<stdin>\n-old\n+new\n</stdin>"
    )
    assert with_piped("review this", PipedInput("\n\n", stopped=False)) == "review this"  # nothing to send
    stopped = with_piped("q", PipedInput("abc", stopped=True))
    marker = f"[… reading stopped after {STDIN_READ_MAX_BYTES} bytes: anything later was not read]"
    assert stopped == f"q\n\n<stdin>\nabc\n{marker}\n</stdin>"


def test_what_counts_as_piped(tmp_path: Path) -> None:
    r, w = os.pipe()
    main, secondary = pty.openpty()
    devnull = os.open(os.devnull, os.O_RDONLY)
    regular = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        assert is_piped(r) and is_piped(regular)
        assert not is_piped(secondary) and not is_piped(devnull)
        assert not is_piped(10_000)  # not open at all
    finally:
        for fd in (r, w, main, secondary, devnull, regular):
            os.close(fd)


def test_an_open_silent_pipe_is_given_up_and_an_ended_one_is_empty() -> None:
    r, w = os.pipe()
    try:
        assert read_piped(r, wait_s=0.05) is None  # nobody writes, nobody closes
        os.close(w)
        assert read_piped(r, wait_s=0.05) == PipedInput("", stopped=False)  # the end is an answer too
    finally:
        os.close(r)


@given(st.binary(max_size=EXEC_OUTPUT_MAX_BYTES * 2), st.integers(min_value=1, max_value=EXEC_OUTPUT_MAX_BYTES * 3))
def test_stdin_is_kept_as_a_commands_output_is_and_reading_stops_at_the_bound(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, read_max: int
) -> None:
    path = tmp_path_factory.mktemp("stdin") / "piped"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        got = read_piped(fd, read_max=read_max, wait_s=1)
    finally:
        os.close(fd)
    expected = HeadTail()
    expected.feed(data[:read_max])
    assert got == PipedInput(expected.text(), stopped=len(data) >= read_max)


def test_a_long_log_keeps_its_end() -> None:
    r, w = os.pipe()
    log = b"".join(b"test %d passed\n" % n for n in range(20_000)) + b"FINAL SUMMARY: 1 failed\n"

    def write() -> None:
        os.write(w, log)
        os.close(w)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        got = read_piped(r, wait_s=5)
    finally:
        writer.join()
        os.close(r)
    assert got is not None and not got.stopped
    assert got.text.startswith("test 0 passed\n") and got.text.endswith("FINAL SUMMARY: 1 failed\n")
    assert "output cut" in got.text and len(got.text.encode()) < EXEC_OUTPUT_MAX_BYTES + 200


def test_piped_text_reaches_the_model_with_the_prompt(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(text_reply("Looks right."))
        done = piped(server, tree, tmp_path, b"-old line\n+new line\n", "-p", "review this diff")
        assert done.returncode == 0, done.stderr
        assert done.stdout.decode() == "Looks right.\n"
        assert user_content(server) == "review this diff\n\n<stdin>\n-old line\n+new line\n</stdin>"


def test_a_long_log_reaches_the_model_with_its_end(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(text_reply("ok"))
        done = piped(
            server,
            tree,
            tmp_path,
            b"".join(b"test %d passed\n" % n for n in range(20_000)) + b"FINAL SUMMARY: 1 failed\n",
            "-p",
            "why does it fail?",
        )
        assert done.returncode == 0, done.stderr
        content = user_content(server)
        assert content.startswith("why does it fail?\n\n<stdin>\ntest 0 passed\n")
        assert content.endswith("FINAL SUMMARY: 1 failed\n</stdin>")
        assert "[… output cut:" in content


def test_an_open_stdin_nobody_writes_to_never_hangs_the_run(tree: Path, tmp_path: Path) -> None:
    """A parent that spawns dashfloat with a stdin pipe it never closes (many process libraries do)."""
    with ScriptedServer() as server:
        server.enqueue(text_reply("done"))
        main = subprocess.Popen(
            dashfloat_argv(server, tree, "-p", "go"),
            env=isolated_environment(tmp_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            out, err = _read_all(main)
            assert main.returncode == 0, err
            assert out == b"done\n"
            assert f"nothing on stdin within {STDIN_FIRST_BYTE_WAIT_S:g} s: not read".encode() in err
            assert user_content(server) == "go"
        finally:
            main.kill()
            main.wait()
            for stream in (main.stdin, main.stdout, main.stderr):
                assert stream is not None
                stream.close()


def _read_all(main: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """stdout and stderr to their end, stdin left open (communicate() would close it)."""
    assert main.stdout is not None and main.stderr is not None
    out = main.stdout.read()
    err = main.stderr.read()
    main.wait(timeout=60)
    return out, err


def test_the_prompt_on_stdin_over_the_bound_is_refused(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        done = piped(server, tree, tmp_path, b"y" * (STDIN_PROMPT_MAX_BYTES + 1), "-p", "-")
        assert done.returncode == 2
        assert done.stderr.decode() == f"dashfloat: the prompt on stdin is over {STDIN_PROMPT_MAX_BYTES} bytes\n"
        assert not server.requests


def test_the_tui_without_a_terminal_says_what_to_use_instead(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        done = piped(server, tree, tmp_path, b"hello\n")
        assert done.returncode == 2
        assert done.stderr.decode() == (
            "dashfloat: the TUI needs a terminal on stdin and stdout; in a script use -p PROMPT (or -p - for stdin)\n"
        )
        assert done.stdout == b""


def test_mentions_in_piped_text_attach_nothing_and_the_prompts_own_still_do(tree: Path, tmp_path: Path) -> None:
    # Found by review: the piped text was read for @mentions like the prompt, so a log's "cc @alice" or a fetched
    # page's "see @.env" read files into the request (and showed read_file rows) that nobody asked for.
    (tree / ".env").write_text("TOKEN=piped-secret\n")
    with ScriptedServer() as server:
        server.enqueue(text_reply("ok"))
        done = piped(server, tree, tmp_path, b"see @.env and cc @alice\n", "-p", "explain @a.txt")
        assert done.returncode == 0, done.stderr
        content = user_content(server)
    assert "piped-secret" not in content and "alice" not in done.stderr.decode()
    assert "hello" in content  # a.txt, which the prompt itself mentions
    assert "<stdin>\nsee @.env and cc @alice\n</stdin>" in content
