"""A command's process and memory bounds (ADR 0057 §1), crossed by real fork bombs and memory hogs under limits set
low for the test (so the test itself cannot hurt the machine), unsandboxed and in the sandbox."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import msgspec
import psutil
import pytest

from dashfloat.executor import _confine
from dashfloat.executor._confine import Bounds, _own_cgroup, bounds_for
from dashfloat.executor._exec import Command, CommandResult
from dashfloat.executor._limits import (
    COMMAND_MAX_DATA_BYTES,
    COMMAND_MAX_FILE_BYTES,
    COMMAND_MAX_MEMORY_BYTES,
    COMMAND_MAX_PROCESSES,
)
from dashfloat.executor._sandbox import Sandbox
from dashfloat.executor._sandbox_probe import detect
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import CommandExited, CommandLimits, CommandTimedOut, SandboxMode, SandboxPolicy, SubmitPrompt
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import agent_tree, collect, turn_over
from tests.executor.conftest import EXIT_WAIT_S, within

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


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
@pytest.mark.parametrize("where", ["f", "/tmp/f"])
def test_a_runaway_write_stops_at_the_file_size_limit_and_the_model_is_told(
    root: Path, sandboxed: bool, where: str
) -> None:
    if where.startswith("/tmp") and not sandboxed:
        pytest.skip("the machine's own /tmp: only the sandbox's is private")
    result = run(f"yes > {where}", Bounds(max_file_bytes=10 * MIB), root, sandboxed)
    assert isinstance(result, CommandExited) and result.exit_code == 128 + signal.SIGXFSZ, result
    assert "[DashFloat's file size limit: the command failed with status 153 (killed by SIGXFSZ): a process of a " in (
        result.output.output
    )
    assert "no file larger than 10 MiB (COMMAND_MAX_FILE_BYTES, RLIMIT_FSIZE; EFBIG)]" in result.output.output
    if where == "f":
        assert (root / "f").stat().st_size == 10 * MIB


def test_a_writer_that_ignores_sigxfsz_is_told_file_too_large_and_so_is_the_model(root: Path) -> None:
    # Python ignores SIGXFSZ: its write fails with EFBIG ("File too large"), and the command exits 1.
    write = f'{PYTHON} -c \'open("f", "wb").write(bytes(%d))\''
    over = run(write % (20 * MIB), Bounds(max_file_bytes=10 * MIB), root)
    assert isinstance(over, CommandExited) and over.exit_code == 1
    assert "[DashFloat's file size limit: the command failed saying 'File too large'" in over.output.output
    under = run(write % (5 * MIB) + " && echo fine", Bounds(max_file_bytes=10 * MIB), root)
    assert isinstance(under, CommandExited) and under.output.output == "fine\n"


@needs_memory
@pytest.mark.parametrize("where", ["/tmp/f", "/dev/shm/f"])
def test_the_sandboxs_private_tmpfs_counts_against_the_memory_limit(root: Path, where: str) -> None:
    # What a command writes to the sandbox's /tmp or /dev/shm is memory (tmpfs), charged to its memory cgroup: over
    # the limit the command is killed, and the files go with its mount namespace.
    bounds = Bounds(max_memory_bytes=100 * MIB)
    result = run(f"head -c {300 * MIB} /dev/zero > {where}", bounds, root, sandboxed=True)
    text = output(result)
    assert "DashFloat's memory limit:" in text and "more than 100 MiB together" in text, text


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


def _cgroup_with_a_sleeper(base: str, name: str) -> tuple[str, subprocess.Popen[bytes]]:
    path = os.path.join(base, name)
    os.mkdir(path)
    sleeper = subprocess.Popen(["sleep", "300"])
    (Path(path) / "cgroup.procs").write_text(str(sleeper.pid))
    return path, sleeper


@needs_pids
@pytest.mark.usefixtures("private_cgroups")
def test_the_sweep_kills_what_a_gone_dashfloat_left_in_its_cgroups_and_never_a_live_ones() -> None:
    # ADR 0062: a DashFloat SIGKILLed whole leaves its commands running in their cgroups; the next one's sweep kills
    # them. Its cgroups are named for the owner's PID namespace, pid and start time; only an owner in our namespace
    # whose pid runs no more, or runs a later process, is gone.
    base = _confine._own_cgroup("pids")  # the test's own (private_cgroups)
    assert base is not None
    namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    owner = subprocess.Popen(["sleep", "300"])  # another DashFloat, running: its command must live on
    started = _confine._start_time(owner.pid)
    exited = subprocess.Popen(["sleep", "300"])  # one SIGKILLed and never reaped (PID 1 may reap nothing)
    exited_start = _confine._start_time(exited.pid)
    os.kill(exited.pid, signal.SIGKILL)
    assert started is not None and exited_start is not None
    assert within(lambda: psutil.Process(exited.pid).status() == psutil.STATUS_ZOMBIE, EXIT_WAIT_S)
    names = {
        "gone": f"dashfloat-{namespace}-{2**22 + 1}-5-0",  # above any pid_max: no such process runs
        "reused": f"dashfloat-{namespace}-{owner.pid}-{int(started) - 1}-0",  # its pid, an earlier process
        "zombie": f"dashfloat-{namespace}-{exited.pid}-{exited_start}-0",
        "live": f"dashfloat-{namespace}-{owner.pid}-{started}-0",
        "elsewhere": f"dashfloat-1-{2**22 + 1}-5-0",  # another PID namespace's: its pids are not ours to judge
    }
    made = {key: _cgroup_with_a_sleeper(base, name) for key, name in names.items()}
    try:
        _confine._swept.discard(base)
        _confine.sweep()
        for key in ("gone", "reused", "zombie"):
            path, sleeper = made[key]
            assert sleeper.wait(EXIT_WAIT_S) == -signal.SIGKILL, key
            assert within(functools.partial(_confine._remove, path), EXIT_WAIT_S) and not os.path.exists(path), key
        for key in ("live", "elsewhere"):
            path, sleeper = made[key]
            assert sleeper.poll() is None and os.path.exists(path), key
    finally:
        for path, sleeper in made.values():
            sleeper.kill()
            sleeper.wait()
            within(functools.partial(_confine._remove, path), EXIT_WAIT_S)
        for process in (owner, exited):
            process.kill()
            process.wait()


@needs_pids
def test_a_cgroup_without_cgroup_kill_is_emptied_even_of_a_fork_bomb() -> None:
    # cgroup v1 has no cgroup.kill: pids.max goes to 0 (no fork from then on), then the kill passes.
    base = _own_cgroup("pids")
    assert base is not None
    path = os.path.join(base, f"dashfloat-test-{os.getpid()}")
    os.mkdir(path)
    (Path(path) / "pids.max").write_text(str(TEST_MAX_PROCESSES))
    bomb = subprocess.Popen(
        ["/bin/sh", "-c", f"echo $$ > {path}/cgroup.procs && exec {PYTHON} -c '{FORKING_FOREVER}'"],
        start_new_session=True,
    )
    try:
        assert within(lambda: len((Path(path) / "cgroup.procs").read_text().split()) == TEST_MAX_PROCESSES, 10.0)
        assert _confine.kill_cgroup(path) != 0
        assert within(lambda: (Path(path) / "cgroup.procs").read_text() == "", EXIT_WAIT_S)
        assert bomb.wait(EXIT_WAIT_S) == -signal.SIGKILL
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(bomb.pid, signal.SIGKILL)
        bomb.wait()
        assert within(lambda: _confine._remove(path), EXIT_WAIT_S)


FORKING_FOREVER = "import os, time\nwhile True:\n  try:\n    os.fork()\n  except OSError:\n    time.sleep(0.01)"
"""Every process forks again and again, and tries again when a fork is refused: the cgroup stays full."""


def test_a_cgroup_name_is_gone_only_when_it_is_ours_and_its_owner_ran_no_more() -> None:
    namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    me = f"{os.getpid()}-{_confine._start_time(os.getpid())}"
    assert not _confine.owner_gone(f"dashfloat-{namespace}-{me}-3")
    assert _confine.owner_gone(f"dashfloat-{namespace}-{2**22 + 1}-1-3")
    for other in ("dashfloat-1188-0", f"dashfloat-1-{2**22 + 1}-1-3", "user.slice", f"dashfloat-{namespace}-x-1-3"):
        assert not _confine.owner_gone(other), other


def test_the_defaults_are_the_constants_and_a_configured_limit_replaces_only_its_own() -> None:
    default = _confine.bounds_for(CommandLimits())
    assert (default.max_processes, default.max_data_bytes, default.max_file_bytes) == (
        COMMAND_MAX_PROCESSES,
        COMMAND_MAX_DATA_BYTES,
        COMMAND_MAX_FILE_BYTES,
    )
    assert default.max_memory_bytes == Bounds().max_memory_bytes
    set_ = _confine.bounds_for(CommandLimits(max_memory_mib=100, max_process_memory_mib=50, max_file_mib=1))
    assert (set_.max_memory_bytes, set_.max_data_bytes, set_.max_file_bytes) == (100 * MIB, 50 * MIB, MIB)
    assert set_.max_processes == COMMAND_MAX_PROCESSES


@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
def test_a_configured_file_limit_binds_a_command_the_model_asked_for(sandbox: SandboxMode) -> None:
    # [limits] max_file_mib = 1 (launch puts it in the session's SandboxState): through a real agent and executor.
    base = Path(tempfile.mkdtemp(dir="/var/tmp"))  # sandboxed commands' trees live outside /tmp (TEAM.md)
    tree = base / "work"
    tree.mkdir()
    state = msgspec.structs.replace(detect(sandbox, False, [], os.environ), limits=CommandLimits(max_file_mib=1))
    try:
        with ScriptedServer() as server, agent_tree(server, tree, approval="all", sandbox=state) as link:
            server.enqueue(tool_calls_reply([("c", "execute_command", {"command": "yes > f"})]), text_reply("ok"))
            link.send(SubmitPrompt(text="run"))
            collect(link, turn_over)
            sent = json.dumps(server.requests[1]["messages"])
        assert "no file larger than 1 MiB ([limits] max_file_mib in config.toml, RLIMIT_FSIZE; EFBIG)" in sent
        assert (tree / "f").stat().st_size == MIB
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_note_names_the_config_field_that_set_its_bound_and_the_constant_otherwise(tmp_path: Path) -> None:
    """The model is told what to change: a bound the user set in ``[limits]`` is named by its field, not by the
    executor's constant it replaced (the counters are read from the cgroups' events files, stood in for here)."""
    (tmp_path / "pids.events").write_text("max 3\n")
    (tmp_path / "memory.events").write_text("low 0\noom_kill 1\n")
    everything = CommandLimits(max_processes=64, max_memory_mib=100, max_process_memory_mib=50, max_file_mib=1)
    for limits, names in [
        (everything, ["max_processes", "max_memory_mib", "max_process_memory_mib", "max_file_mib"]),
        (CommandLimits(max_file_mib=1), ["max_file_mib"]),
        (CommandLimits(), []),
    ]:
        bounds = bounds_for(limits)
        bounds.cgroups = {"pids": str(tmp_path), "memory": str(tmp_path)}
        told = bounds.note("yes: File too large\nMemoryError", failed=True, exit_code=1)
        bounds.cgroups = {}  # not ours to remove
        told += bounds.note("MemoryError", failed=True, exit_code=1)  # the per-process note (no OOM kill counted)
        for field, constant in [
            ("max_processes", "COMMAND_MAX_PROCESSES"),
            ("max_memory_mib", "COMMAND_MAX_MEMORY_BYTES"),
            ("max_process_memory_mib", "COMMAND_MAX_DATA_BYTES"),
            ("max_file_mib", "COMMAND_MAX_FILE_BYTES"),
        ]:
            configured = field in names
            assert (f"[limits] {field} in config.toml" in told) == configured, (field, told)
            assert (constant in told) != configured, (constant, told)


def test_on_a_machine_with_less_memory_the_note_names_the_share_it_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below COMMAND_MAX_MEMORY_BYTES of memory the default is COMMAND_MAX_MEMORY_SHARE of it: the note says so rather
    than naming a constant whose number it does not show; the per-process note names the same source."""
    monkeypatch.setattr(_confine, "memory_bound", lambda cap: 3 * 2**30)
    (tmp_path / "memory.events").write_text("oom_kill 2\n")
    bounds = Bounds()
    bounds.cgroups = {"memory": str(tmp_path)}
    told = bounds.note("", failed=True, exit_code=137)
    bounds.cgroups = {}
    told += bounds.note("MemoryError", failed=True, exit_code=1)
    assert told.count("3 GiB together (COMMAND_MAX_MEMORY_SHARE of this machine's memory)") == 1
    assert "and all of them together 3 GiB (COMMAND_MAX_MEMORY_SHARE of this machine's memory)" in told
    assert "COMMAND_MAX_MEMORY_BYTES" not in told
    configured = bounds_for(CommandLimits(max_memory_mib=512))
    configured.cgroups = {"memory": str(tmp_path)}
    assert "512 MiB together ([limits] max_memory_mib in config.toml)" in configured.note("", failed=True)
    configured.cgroups = {}
