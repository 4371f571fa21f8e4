"""execute_command: sh -c semantics, combined output, the head cap, timeouts, no leftover processes."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import psutil

from dashfloat.executor import EXEC_OUTPUT_MAX_BYTES, EXEC_TIMEOUT_S, run_tool
from dashfloat.executor._exec import GATE_CLOSED_EXIT, Command
from dashfloat.executor._limits import EXEC_DRAIN_AFTER_EXIT_S, EXEC_OUTPUT_HEAD_BYTES
from dashfloat.protocol import CommandExited, ToolCancelled
from tests.executor.conftest import EXIT_WAIT_S, PEAK_RSS_SNIPPET, gone, group_gone, run_json, run_python, within

SHORT_TIMEOUT_S = 0.5


def run(root: Path, command: str, cwd: str = ".", timeout_s: float = 10.0) -> dict[str, Any]:
    return run_json("execute_command", {"command": command, "cwd": cwd}, str(root), timeout_s)


def test_shell_semantics(root: Path) -> None:
    (root / "sub").mkdir()
    assert run(root, "echo a; echo b")["output"] == "a\nb\n"
    assert run(root, "printf 'x\\ny\\nz\\n' | wc -l | tr -d ' '")["output"] == "3\n"
    assert run(root, "cd sub && pwd")["output"] == f"{os.path.realpath(root)}/sub\n"
    assert run(root, "pwd", cwd="sub")["output"] == f"{os.path.realpath(root)}/sub\n"
    assert run(root, "X=1; export X; echo $X")["output"] == "1\n"


def test_exit_codes_and_stdin(root: Path) -> None:
    assert run(root, "true") == {
        "ok": True,
        "exit_code": 0,
        "output": "",
        "truncated": False,
        "total_bytes": 0,
    }
    r = run(root, "echo nope; exit 7")
    assert (r["ok"], r["exit_code"], r["output"]) == (False, 7, "nope\n")
    assert run(root, "cat")["output"] == ""  # stdin is /dev/null: nothing to wait for
    r = run(root, "kill -9 $$")
    assert (r["exit_code"], r["signal"]) == (128 + signal.SIGKILL, "SIGKILL")


def test_stdout_and_stderr_combined_in_order(root: Path) -> None:
    assert run(root, "echo 1; echo 2 >&2; echo 3; echo 4 >&2")["output"] == "1\n2\n3\n4\n"


def test_output_cap_is_crossed(root: Path) -> None:
    at = run(root, f"head -c {EXEC_OUTPUT_MAX_BYTES} /dev/zero | tr '\\0' a")
    assert (at["truncated"], at["total_bytes"], at["output"]) == (
        False,
        EXEC_OUTPUT_MAX_BYTES,
        "a" * EXEC_OUTPUT_MAX_BYTES,
    )
    over = run(root, f"head -c {EXEC_OUTPUT_MAX_BYTES + 1} /dev/zero | tr '\\0' a")
    assert (over["truncated"], over["total_bytes"]) == (True, EXEC_OUTPUT_MAX_BYTES + 1)
    head, tail = EXEC_OUTPUT_HEAD_BYTES, EXEC_OUTPUT_MAX_BYTES - EXEC_OUTPUT_HEAD_BYTES
    assert (
        over["output"]
        == "a" * head
        + (
            f"\n[… output cut: 1 bytes (0 lines) not shown here; "
            f"the first {head} and the last {tail} of {EXEC_OUTPUT_MAX_BYTES + 1} bytes are shown …]\n"
        )
        + "a" * tail
    )


def test_the_end_of_a_long_output_is_kept(root: Path) -> None:
    # A test runner's 108 KB log: its summary comes last and must reach the model.
    command = (
        'i=0; while [ $i -lt 3000 ]; do echo "test_$i ... PASSED padding padding"; i=$((i+1)); done; echo FINAL SUMMARY'
    )
    r = run(root, command)
    output, total = r["output"], r["total_bytes"]
    assert isinstance(output, str) and isinstance(total, int)
    lines = output.splitlines()
    assert r["truncated"] is True and total > 100_000
    assert lines[0] == "test_0 ... PASSED padding padding" and lines[-1] == "FINAL SUMMARY"
    [marker] = [line for line in lines if line.startswith("[… output cut:")]
    assert f"of {total} bytes are shown" in marker
    assert len(output.encode()) <= EXEC_OUTPUT_MAX_BYTES + len(marker.encode()) + 2


def test_flood_keeps_memory_bounded() -> None:
    flood = 256 << 20
    out = run_python(
        PEAK_RSS_SNIPPET + "import tempfile\n"
        "from dashfloat.executor import run_tool\n"
        f"args = {{'command': 'head -c {flood} /dev/zero'}}\n"
        "r = run_tool('execute_command', args, tempfile.gettempdir()).output\n"
        "print(r.total_bytes, len(r.output), r.truncated)\n"
        "print(PEAK_RSS_KIB())\n"
    )
    summary, rss_kib = out.splitlines()
    total, length, truncated = summary.split()
    assert (int(total), truncated) == (flood, "True")
    assert int(length) < EXEC_OUTPUT_MAX_BYTES + 200  # the kept bytes and the marker
    assert int(rss_kib) < 100 * 1024  # buffering the flood would need 256 MiB


def test_timeout(root: Path) -> None:
    r = run(root, "echo started; sleep 5; echo never", timeout_s=SHORT_TIMEOUT_S)
    assert r["ok"] is False
    assert r["error"] == f"timed out after {SHORT_TIMEOUT_S:g}s"
    assert r["output"] == "started\n"
    assert "exit_code" not in r


def test_default_timeout_is_the_seeds() -> None:
    assert EXEC_TIMEOUT_S == 30
    assert run_tool.__defaults__ is not None and run_tool.__defaults__[0] == EXEC_TIMEOUT_S


def test_background_child_dies_with_its_shell(root: Path) -> None:
    r = run(root, "sleep 300 & echo $!")
    assert r["ok"] is True
    pid = int(str(r["output"]))
    assert gone(pid)  # read from the process table, not assumed


def test_timeout_kills_the_whole_group(root: Path) -> None:
    marker = root / "pids"
    r = run(root, f"sleep 300 & echo $$ $! > {marker}; sleep 300", timeout_s=SHORT_TIMEOUT_S)
    assert str(r["error"]).startswith("timed out")
    pgid, background = map(int, marker.read_text().split())
    assert gone(background)
    assert group_gone(pgid)


def test_grandchild_holding_the_pipe_is_killed_after_the_drain(root: Path) -> None:
    # setsid puts the sleeper outside the command's group (no sandbox here): after the shell exits it gets
    # EXEC_DRAIN_AFTER_EXIT_S, then is killed, so the result is the exit, long before the timeout.
    pidfile = root / "escaped.pid"
    command = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' & while [ ! -s {pidfile} ]; do sleep 0.01; done"
    r = run(root, command, timeout_s=120)
    escaped = int(pidfile.read_text())
    try:
        assert "error" not in r and r["exit_code"] == 0
        assert str(r["output"]).endswith(
            f"[1 background process(es) kept the output open after the shell exited; "
            f"killed after {EXEC_DRAIN_AFTER_EXIT_S:g}s]"
        )
        assert gone(escaped)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(escaped, signal.SIGKILL)


def test_refusals(root: Path) -> None:
    (root / "f.txt").write_text("")
    assert str(run(root, "true", cwd="..")["error"]).startswith("path escapes the working directory")
    assert run(root, "true", cwd="f.txt")["error"] == "cwd is not an existing directory: f.txt"
    assert run(root, "echo a\0b")["error"] == "command contains a NUL byte"


def test_a_held_command_runs_only_once_released(root: Path) -> None:
    command = Command(f"echo $$ > {root / 'ran'}; echo ran", str(root), 10.0, held=True)
    gate = psutil.Process(command.pgid)
    # Blocked in its gate's read (it has nothing to read until released), not yet the command.
    assert within(lambda: gate.status() == psutil.STATUS_SLEEPING and not (root / "ran").exists(), EXIT_WAIT_S)
    assert command.held and "read _" in gate.cmdline()[2]
    command.release()
    result = command.run_to_end()
    assert isinstance(result, CommandExited) and result.exit_code == 0 and result.output.output == "ran\n"
    assert int((root / "ran").read_text()) == command.pgid  # the same process: the group it was reported as


def test_a_command_whose_gate_closes_unreleased_never_runs(root: Path) -> None:
    command = Command(f"echo ran > {root / 'ran'}", str(root), 10.0, held=True)
    command.cancel()  # closes the gate as the executor's death would, and kills the group
    assert isinstance(command.result, ToolCancelled)
    assert group_gone(command.pgid) and not (root / "ran").exists()
    # Closed alone (the executor died, nobody killed the group): the gate exits on its own, unrun.
    command = Command(f"echo ran > {root / 'ran'}", str(root), 10.0, held=True)
    os.close(command._gate or -1)
    command._gate = None
    result = command.run_to_end()
    assert isinstance(result, CommandExited) and result.exit_code == GATE_CLOSED_EXIT and result.output.output == ""
    assert not (root / "ran").exists()
