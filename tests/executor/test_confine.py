"""A command's process and memory bounds (ADR 0057 §1), crossed by real fork bombs and memory hogs under limits set
low for the test (so the test itself cannot hurt the machine), unsandboxed and in the sandbox."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from dashfloat.executor._confine import Bounds, _own_cgroup
from dashfloat.executor._exec import Command, CommandResult
from dashfloat.executor._limits import (
    COMMAND_MAX_DATA_BYTES,
    COMMAND_MAX_MEMORY_BYTES,
    COMMAND_MAX_PROCESSES,
)
from dashfloat.executor._sandbox import Sandbox, detect
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import CommandExited, CommandTimedOut, SandboxPolicy

PYTHON = os.path.realpath(sys.executable)
MIB = 2**20
TEST_MAX_PROCESSES = 40
"""Far below COMMAND_MAX_PROCESSES: the bomb is stopped here, a few dozen processes into it."""
BOMB = "b(){ b | b & }; b; sleep 2"
"""A real fork bomb (each call forks two more, forever), and a shell still there when it is stopped: the command ends
at its timeout (BOMB_TIMEOUT_S), which kills the whole group."""
BOMB_TIMEOUT_S = 3.0

needs_pids = pytest.mark.skipif(_own_cgroup("pids") is None, reason="no pids cgroup this process may create")
needs_memory = pytest.mark.skipif(_own_cgroup("memory") is None, reason="no memory cgroup this process may create")


def run(command: str, bounds: Bounds, root: Path, sandboxed: bool = False, timeout_s: float = 30.0) -> CommandResult:
    if not sandboxed:
        return Command(command, str(root), timeout_s, bounds=bounds).run_to_end()
    environ = dict(os.environ)
    sandbox = Sandbox.for_session(detect("workspace-write", False, [], environ), environ)
    fixed = Root(str(root))
    try:
        wrap = sandbox.wrap(SandboxPolicy(), fixed.fd, fixed.path)
        assert wrap is not None
        return Command(command, str(root), timeout_s, wrap, bounds=bounds).run_to_end()
    finally:
        fixed.close()


def output(result: CommandResult) -> str:
    assert isinstance(result, CommandExited | CommandTimedOut), result
    return result.output.output


def test_the_defaults_are_far_above_a_build_and_below_the_machine() -> None:
    assert COMMAND_MAX_PROCESSES >= 1024 and COMMAND_MAX_DATA_BYTES >= 4 * 2**30
    assert Bounds().max_memory_bytes <= COMMAND_MAX_MEMORY_BYTES
    assert Bounds().max_memory_bytes >= min(COMMAND_MAX_MEMORY_BYTES, 2**30)


@needs_pids
@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
def test_a_fork_bomb_stops_at_the_process_limit_and_the_model_is_told(root: Path, sandboxed: bool) -> None:
    bounds = Bounds(max_processes=TEST_MAX_PROCESSES)
    result = run(BOMB, bounds, root, sandboxed, timeout_s=BOMB_TIMEOUT_S)
    text = output(result)
    assert "DashFloat's process limit:" in text, text[-500:]
    assert f"at most {TEST_MAX_PROCESSES} processes and threads at once (COMMAND_MAX_PROCESSES)" in text
    assert bounds.cgroups == {}  # removed once the command was over (or left to be removed later)


@needs_pids
def test_a_command_under_the_process_limit_is_not_told_anything(root: Path) -> None:
    result = run(
        "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.1 & done; wait; echo done", Bounds(TEST_MAX_PROCESSES), root
    )
    assert isinstance(result, CommandExited) and result.exit_code == 0
    assert result.output.output == "done\n"


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
def test_a_process_over_the_data_limit_fails_its_allocation_and_the_model_is_told(root: Path, sandboxed: bool) -> None:
    bounds = Bounds(max_data_bytes=100 * MIB)
    over = run(f"{PYTHON} -c 'x = bytearray(300 * 2**20)'", bounds, root, sandboxed)
    assert isinstance(over, CommandExited) and over.exit_code == 1
    assert "MemoryError" in over.output.output
    assert "[the command failed saying 'MemoryError': each process of a command may use at most 100 MiB" in (
        over.output.output
    )
    under = run(f"{PYTHON} -c 'x = bytearray(20 * 2**20); print(len(x))'", Bounds(max_data_bytes=100 * MIB), root)
    assert isinstance(under, CommandExited) and under.output.output == f"{20 * MIB}\n"


HOG = f"{PYTHON} -c 'import time; x = bytearray(80 * 2**20); x[::4096] = bytes(len(x[::4096])); time.sleep(1)'"
"""One process touching 80 MiB (every page), under each process's own limit but not two of them together."""


@needs_memory
def test_processes_over_the_memory_limit_together_are_killed_and_the_model_is_told(root: Path) -> None:
    bounds = Bounds(max_memory_bytes=100 * MIB)
    result = run(f"{HOG} & {HOG}; wait", bounds, root)
    text = output(result)
    assert "DashFloat's memory limit: 1 process(es) of this command were killed (SIGKILL)" in text, text
    assert "more than 100 MiB together (COMMAND_MAX_MEMORY_BYTES)" in text
    alone = run(f"{HOG}; echo fine", Bounds(max_memory_bytes=100 * MIB), root)
    assert isinstance(alone, CommandExited) and alone.output.output == "fine\n"


def test_everyday_tools_run_under_the_default_bounds(root: Path) -> None:
    # git, a compiler where there is one, the interpreter with threads, in the sandbox: nothing near a bound.
    script = (
        "git init -q . && git -c user.email=a@b -c user.name=n commit -q --allow-empty -m x"
        " && git log --oneline | wc -l"
        f" && {PYTHON} -c 'import concurrent.futures as f; print(sum(f.ThreadPoolExecutor(64).map(abs, range(1000))))'"
        " && if command -v cc >/dev/null; then printf 'int main(void){return 0;}' > m.c && cc m.c -o m && ./m; fi"
        " && echo ok"
    )
    result = run(script, Bounds(), root, sandboxed=True)
    assert isinstance(result, CommandExited) and result.exit_code == 0, result
    assert result.output.output == "1\n499500\nok\n"


def test_words_about_memory_in_a_successful_commands_output_are_no_failure(root: Path) -> None:
    (root / "log").write_text("kernel: out of memory: killed process 12\n")
    result = run("grep 'out of memory' log", Bounds(max_data_bytes=100 * MIB), root)
    assert isinstance(result, CommandExited) and result.exit_code == 0
    assert result.output.output == "kernel: out of memory: killed process 12\n"


@needs_pids
def test_a_gone_executors_empty_cgroups_are_swept_and_a_busy_one_is_kept(root: Path) -> None:
    import subprocess

    from dashfloat.executor import _confine

    base = _own_cgroup("pids")
    assert base is not None
    dead = os.path.join(base, f"dashfloat-{2**22 + 1}-0")  # above pid_max: no such process runs
    busy = os.path.join(base, f"dashfloat-{2**22 + 2}-0")
    os.mkdir(dead)
    os.mkdir(busy)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (Path(busy) / "cgroup.procs").write_text(str(sleeper.pid))
        _confine._swept.discard(base)
        run("true", Bounds(), root)
        assert not os.path.exists(dead) and os.path.exists(busy)
    finally:
        sleeper.kill()
        sleeper.wait()
        _confine._left_behind.append(busy)
        _confine.remove_left_behind()
        assert not os.path.exists(busy)
