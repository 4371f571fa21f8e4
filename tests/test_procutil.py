"""Stopping a child process, on real forked processes: asked, waited for, killed, reaped, described."""

from __future__ import annotations

import ast
import gc
import json
import os
import platform
import signal
import subprocess
import sys
import time
import types
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import psutil
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dashfloat
from dashfloat._startup.fork import FORK, INTERNED_NAMES_HEADROOM, fork_context
from dashfloat.procutil import (
    STOP_PASSES_MAX,
    FgWatch,
    become_child,
    continue_processes,
    describe_exit,
    stop_descendants,
    stop_process,
)
from tests.e2e import wait_for

LONG_GRACE_S = 30.0  # generous: a stop that waits this long instead of acting would fail the suite's timeout


def _sleep_forever() -> None:
    while True:
        time.sleep(3600)


def _ignore_sigterm(ready: Connection) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready.send_bytes(b"ready")
    _sleep_forever()


def _exit_on_eof(conn: Connection, parents_end: Connection) -> None:
    parents_end.close()  # else our own copy would keep the pipe open
    try:
        conn.recv_bytes()
    except EOFError:
        sys.exit(0)


def _exit_with(code: int) -> None:
    os._exit(code)


def _started(target: Callable[..., object], *args: object) -> BaseProcess:
    process = FORK.Process(target=target, args=args, daemon=True)
    process.start()
    return process


def _reaped(process: BaseProcess) -> bool:
    assert process.pid is not None
    try:
        os.waitpid(process.pid, os.WNOHANG)  # still running, or a zombie nobody collected
    except ChildProcessError:
        return True
    return False


def test_a_running_process_gets_sigterm_and_is_reaped() -> None:
    process = _started(_sleep_forever)
    assert stop_process(process, LONG_GRACE_S) == "killed by SIGTERM"
    assert _reaped(process)


def test_a_process_that_ignores_the_request_is_killed_after_the_grace() -> None:
    ours, theirs = FORK.Pipe()
    process = _started(_ignore_sigterm, theirs)
    assert ours.recv_bytes() == b"ready"  # the handler is in place before we ask
    assert stop_process(process, 0.05) == "killed by SIGKILL"
    assert _reaped(process)


def test_a_custom_request_is_used_instead_of_a_signal() -> None:
    ours, theirs = FORK.Pipe()
    process = _started(_exit_on_eof, theirs, ours)
    theirs.close()
    asked: list[int | None] = []

    def close_pipe(p: BaseProcess) -> None:
        asked.append(p.pid)
        ours.close()

    assert stop_process(process, LONG_GRACE_S, ask=close_pipe) == "exit code 0"
    assert asked == [process.pid]
    assert _reaped(process)


def test_a_process_already_gone_is_only_reaped_and_described() -> None:
    process = _started(_exit_with, 3)
    process.join()
    asked: list[BaseProcess] = []
    assert stop_process(process, LONG_GRACE_S, ask=asked.append) == "exit code 3"
    assert asked == []


def test_without_a_request_the_grace_is_all_it_gets() -> None:
    process = _started(_sleep_forever)
    assert stop_process(process, 0.0, ask=None) == "killed by SIGKILL"
    assert _reaped(process)


def test_a_request_that_fails_does_not_stop_the_stop() -> None:
    def broken(_: BaseProcess) -> None:
        raise OSError("pipe already closed")

    process = _started(_sleep_forever)
    assert stop_process(process, 0.0, ask=broken) == "killed by SIGKILL"


@pytest.mark.parametrize(("code", "words"), [(0, "exit code 0"), (2, "exit code 2")])
def test_exit_codes_are_described(code: int, words: str) -> None:
    process = _started(_exit_with, code)
    process.join()
    assert describe_exit(process) == words


def test_a_running_process_is_described_as_running() -> None:
    process = _started(_sleep_forever)
    try:
        assert describe_exit(process) == "still running"
    finally:
        stop_process(process, 0.0)


# The heap given back must be most of what was freed: glibc keeps some for its own bins (this is no timed bound).
FREED_MB = 32
GIVEN_BACK_AT_LEAST = 0.5

_FREE_THEN_MEASURE = """
import json, os, sys
from dashfloat._startup.fork import FORK, release_free_heap, start_sharing

def resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

blocks = [bytearray(4000) for _ in range({count})]  # each above pymalloc's 512 bytes: glibc's heap
top = bytearray(4000)  # allocated last: the heap cannot shrink from its end, only a trim gives the rest back
del blocks
before = resident()
if sys.argv[1] == "trim":
    given = release_free_heap()
else:  # a fork through start_sharing trims first
    child = FORK.Process(target=os._exit, args=(0,))
    start_sharing(child)
    child.join()
    given = True
print(json.dumps([before, resident(), given]))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
@pytest.mark.parametrize("how", ["trim", "fork"])
def test_freed_heap_pages_are_given_back_to_the_kernel(how: str) -> None:
    freed = FREED_MB * 2**20
    script = _FREE_THEN_MEASURE.format(count=freed // 4000)
    result = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=60, check=True)
    before, after, given = json.loads(result.stdout)
    assert given is True
    assert before - after >= GIVEN_BACK_AT_LEAST * freed, (before, after)


FORK_HOMES = {"_startup/fork.py", "procutil.py"}
"""Where the forking itself is done: the lean fork context under ``start_sharing``, and the stop guard (a process
that only waits on a pipe, in a session of its own)."""
SHORT_LIVED_FORKS = {
    "executor/_path_index.py": "a child that lives for one bounded walk, never idle",
    "netproxy/_forward.py": "a standalone script (python -I -S) inside one sandbox: no DashFloat heap to share",
}
"""Files that may ``os.fork`` without ``start_sharing``, and why."""


def _started_directly(path: Path) -> list[str]:
    """``x.start()`` calls on names bound to a ``….Process(…)`` in this source: a fork without start_sharing."""
    tree = ast.parse(path.read_text())
    processes: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "Process"
        ):
            processes.update(ast.unparse(target) for target in node.targets)
    return [
        f"{path.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "start"
        and ast.unparse(node.func.value) in processes
    ]


def test_every_child_process_is_started_through_start_sharing() -> None:
    """Frozen for its collector, our freed heap trimmed first (issue 19: idle memory), wherever a child forks."""
    root = Path(dashfloat.__file__).parent
    direct: list[str] = []
    forks: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if str(path.relative_to(root)) in FORK_HOMES:
            continue
        direct += _started_directly(path)
        if "os.fork()" in path.read_text() and str(path.relative_to(root)) not in SHORT_LIVED_FORKS:
            forks.append(str(path.relative_to(root)))
    why = (
        "forks a child without dashfloat/_startup/fork.py's start_sharing: the child's collector then writes to every "
        "object it inherits, copying shared pages into private ones (issue 19); start it through FORK and "
        "start_sharing, or list a fork that lives for one bounded task in SHORT_LIVED_FORKS with its reason"
    )
    assert direct == [] and forks == [], "\n".join(f"{where} {why}" for where in [*direct, *forks])


def test_the_fork_check_sees_a_process_started_directly(tmp_path: Path) -> None:
    source = tmp_path / "spawner.py"
    source.write_text("p = FORK.Process(target=f)\np.start()\nself.q = ctx.Process()\nself.q.start()\n")
    assert _started_directly(source) == ["spawner.py:2", "spawner.py:4"]


THREAD_ARENA_RESERVED_BYTES = 64 * 2**20
"""glibc's reservation for a thread's own arena on 64-bit Linux (HEAP_MAX_SIZE): aligned to its size, the part not
yet used mapped without access. No other mapping of ours is that large and that aligned."""

_THREAD_ALLOCATES = """
import os, sys, threading
from dashfloat._startup.fork import FORK, single_malloc_arena, start_sharing

def thread_arenas() -> int:
    count = 0
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(address, 16) for address in fields[0].split("-"))
            reserved = fields[1] == "---p" and len(fields) == 5 and end - start > {reserved} // 2
            count += reserved and end % {reserved} == 0
    return count

def allocate() -> None:
    global kept
    kept = [bytearray(1000) for _ in range(1000)]  # above pymalloc's 512 bytes: from a malloc arena

def report(out) -> None:
    before = thread_arenas()
    thread = threading.Thread(target=allocate)
    thread.start()
    thread.join()
    os.write(out, f"{{before}} {{thread_arenas()}}\\n".encode())

if sys.argv[1] == "single":
    single_malloc_arena()
if sys.argv[1] == "fork":  # a child forked through start_sharing, as every worker is
    child = FORK.Process(target=report, args=(1,))
    start_sharing(child)
    child.join()
else:
    report(1)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's M_ARENA_MAX is glibc's")
@pytest.mark.parametrize(("how", "arenas_after"), [("default", 1), ("single", 0), ("fork", 0)])
def test_threads_allocate_from_the_main_arena_once_asked(how: str, arenas_after: int) -> None:
    script = _THREAD_ALLOCATES.format(reserved=THREAD_ARENA_RESERVED_BYTES)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    result = subprocess.run(
        [sys.executable, "-c", script, how], capture_output=True, text=True, timeout=60, check=True, env=env
    )
    assert result.stdout.split() == ["0", str(arenas_after)]


_INTERNED_NAMES = """
import os, sys, tracemalloc
from dashfloat._startup.fork import FORK, start_sharing

GROWTH_BYTES = 64 * 1024  # the table grows by a whole new one (~0.2 MB at 16384 slots); a name is ~60 bytes

def names_until_growth(prefix: str, limit: int) -> int:
    # new names interned (each dropped at once) before the table of interned names grew; limit if it did not
    tracemalloc.start()
    for number in range(limit):
        before = tracemalloc.get_traced_memory()[0]
        sys.intern(f"{{prefix}} {{number}}")
        if tracemalloc.get_traced_memory()[0] - before > GROWTH_BYTES:
            return number
    return limit

def report(out: int) -> None:
    os.write(out, str(names_until_growth("child", {child_names})).encode())

# How many names fit now (a probe forked from this state), then fill all but a few of those slots.
read, write = os.pipe()
if os.fork() == 0:
    os.write(write, str(names_until_growth("probe", 100_000)).encode())
    os._exit(0)
free = int(os.read(read, 100))
for number in range(free - 8):
    sys.intern(f"fill {{number}}")
child = FORK.Process(target=report, args=(write,))
if sys.argv[1] == "start_sharing":
    start_sharing(child)
else:
    child.start()
child.join()
print(free, int(os.read(read, 100)))
"""
CHILD_NAMES = 200
"""New names a child interns in the test below: fewer than INTERNED_NAMES_HEADROOM, more than the slots left."""


@pytest.mark.parametrize(("how", "grows_in_child"), [("start_sharing", False), ("plain start", True)])
def test_a_child_started_through_start_sharing_interns_its_first_names_into_the_shared_table(
    how: str, grows_in_child: bool
) -> None:
    # A parent whose table of interned names is 8 slots from full: a plain fork leaves the growth to the child (a
    # table of its own), start_sharing grows it before the fork (ADR 0060).
    assert CHILD_NAMES < INTERNED_NAMES_HEADROOM
    script = _INTERNED_NAMES.format(child_names=CHILD_NAMES)
    result = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=60, check=True)
    free, child_fit = (int(word) for word in result.stdout.split())
    assert free > 8
    assert (child_fit < CHILD_NAMES) is grows_in_child


# ------------------------------------------------------------------ the lean fork (ADR 0053)

LEAN = fork_context(lean=True)
STOCK = fork_context(lean=False)


def _exits(how: str, err_path: str) -> None:
    sys.stderr = open(err_path, "w")  # noqa: SIM115  # block-buffered: what reaches the file was flushed at the end
    if how == "raise":
        raise ValueError("a child that fails")
    if how == "exit 3":
        sys.exit(3)
    if how == "exit words":
        sys.exit("stopped: why")
    if how == "exit none":
        sys.exit()
    sys.stderr.write("some output")  # "return": flushed by the start's end, not by us


@pytest.mark.parametrize("context", [LEAN, STOCK], ids=["lean", "stock"])
@pytest.mark.parametrize(
    ("how", "code", "said"),
    [
        ("return", 0, "some output"),
        ("exit none", 0, ""),
        ("exit 3", 3, ""),
        ("exit words", 1, "stopped: why\n"),
        ("raise", 1, "ValueError: a child that fails"),
    ],
)
def test_a_forked_childs_exit_code_and_stderr_are_multiprocessings(
    tmp_path: Path, context: object, how: str, code: int, said: str
) -> None:
    """The lean fork ends a child as multiprocessing's bootstrap does: the same exit codes, the same words."""
    err = tmp_path / "err"
    process = context.Process(target=_exits, args=(how, str(err)), name="child")  # type: ignore[attr-defined]
    process.start()
    process.join(LONG_GRACE_S)
    assert process.exitcode == code
    text = err.read_text() if err.exists() else ""
    assert said in text
    if how == "raise":
        assert text.startswith("Process child:\nTraceback")


def _report_identity(conn: Connection) -> None:
    import multiprocessing

    conn.send_bytes(
        json.dumps(
            {
                "current": multiprocessing.current_process().name,
                "children": [p.name for p in multiprocessing.active_children()],
                "parent": multiprocessing.parent_process() is None,
                "same stdin": sys.stdin is _STDIN_BEFORE,
            }
        ).encode()
    )


_STDIN_BEFORE = sys.stdin


def test_a_lean_child_is_its_own_current_process_without_its_parents_children() -> None:
    other = _started(_sleep_forever)  # a live child of ours: not the new child's
    ours, theirs = LEAN.Pipe()
    process = LEAN.Process(target=_report_identity, args=(theirs,), name="lean-child", daemon=True)
    process.start()
    got = json.loads(ours.recv_bytes())
    process.join(LONG_GRACE_S)
    stop_process(other, LONG_GRACE_S)
    # multiprocessing's bootstrap would have put a new stdin on /dev/null: it did not run
    assert got == {"current": "lean-child", "children": [], "parent": True, "same stdin": True}
    assert process.exitcode == 0


def test_the_lean_fork_is_used_only_where_multiprocessing_has_what_it_replaces() -> None:
    from multiprocessing import popen_fork

    assert type(FORK) is type(LEAN) and type(LEAN) is not type(STOCK)
    assert type(fork_context(lean=True, needs=((popen_fork.Popen, "_no_such_method"),))) is type(STOCK)


def _report_collector(conn: Connection, log_path: str) -> None:
    forked_with = gc.isenabled()
    become_child(log_path, [])
    conn.send((forked_with, gc.isenabled()))


def test_a_child_forked_while_the_collector_is_off_turns_it_back_on_as_it_starts(tmp_path: Path) -> None:
    """The start-up runs without the cyclic collector until the command line is imported (ADR 0052); the agent and
    its workers, forked meanwhile, must not run so for good."""
    ours, theirs = FORK.Pipe(duplex=False)
    gc.disable()
    try:
        child = FORK.Process(target=_report_collector, args=(theirs, str(tmp_path / "log")))
        child.start()
    finally:
        gc.enable()
    theirs.close()
    assert ours.poll(30)
    assert ours.recv() == (False, True)
    child.join(30)
    ours.close()


_MSGSPEC_WITHOUT_WHAT_IT_DOES_NOT_NEED = """
import sys
from dashfloat._startup.kept_out import KEPT_OUT_OF_MSGSPEC, import_msgspec
import_msgspec()
import msgspec
# What a headless start imports, in every process: nothing of it wants typing_extensions or inspect.
import dashfloat.cli, dashfloat.launch, dashfloat.runtime, dashfloat.runtime.printer
import dashfloat.agent._main, dashfloat.agent._process
from dashfloat.executor import serve
import dashfloat.llm, dashfloat.llm._plain, dashfloat.llm._stream
from dashfloat.agent import AgentOptions
from dashfloat.protocol import ProviderConfig, SubmitPrompt, UiToAgent, msgpack_decoder
options = AgentOptions(provider=ProviderConfig(name='t', base_url='http://x/v1', model='m'), cwd='/')
assert msgspec.json.decode(msgspec.json.encode(options), type=AgentOptions) == options
assert msgpack_decoder(UiToAgent).decode(msgspec.msgpack.encode(SubmitPrompt(text='hi'))) == SubmitPrompt(text='hi')
print(*sorted(name for name in [*KEPT_OUT_OF_MSGSPEC, 'inspect'] if name in sys.modules) or ['none'])
import typing_extensions  # the real package, once msgspec is in
print(typing_extensions.__file__ is not None)
"""


def _words_printed_by(source: str) -> list[str]:
    """What a fresh interpreter running ``source`` printed, split into words; it must exit 0 (else its stderr)."""
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_msgspec_is_imported_without_typing_extensions_and_a_start_never_loads_inspect() -> None:
    """ADR 0055: typing_extensions (installed here for mypy) and inspect cost ~7 ms before the agent's fork; msgspec
    takes typing's functions instead, and the protocol still round-trips; the package is still importable after."""
    assert _words_printed_by(_MSGSPEC_WITHOUT_WHAT_IT_DOES_NOT_NEED) == ["none", "True"]


_START_WITHOUT_COMPRESSORS = """
import sys
# The entry's first imports (ADR 0061), then what a headless start imports, in every process.
from dashfloat._startup.kept_out import KEPT_OUT_OF_SHUTIL, import_msgspec, import_shutil
import_msgspec()
import_shutil()
import dashfloat.cli, dashfloat.launch, dashfloat.runtime, dashfloat.runtime.printer, dashfloat.runtime._agent_link
import dashfloat.agent._main, dashfloat.agent._process
from dashfloat.executor import serve
import dashfloat.llm, dashfloat.llm._plain, dashfloat.llm._stream
print(*sorted(name for name in KEPT_OUT_OF_SHUTIL if name in sys.modules) or ['none'])
import shutil, tempfile
from pathlib import Path
with tempfile.TemporaryDirectory() as tmp:  # what we use of shutil and tempfile still works
    Path(tmp, 'a').write_text('x')
    shutil.copyfile(Path(tmp, 'a'), Path(tmp, 'b'))
    print(Path(tmp, 'b').read_text())
import bz2, lzma  # the real modules, for whoever asks later
print(bz2.decompress(bz2.compress(b'y')).decode(), lzma.decompress(lzma.compress(b'z')).decode())
"""


def test_a_start_imports_shutil_without_bz2_and_lzma() -> None:
    """ADR 0061: multiprocessing's pipes import tempfile and so shutil before the agent's fork, and shutil imports bz2
    and lzma only to list archive formats nothing of ours uses; kept out, shutil and tempfile still work and both
    modules are importable afterwards. The entry imports shutil this way before anything else can."""
    source = Path(dashfloat.__file__).parent.joinpath("_entry.py").read_text()
    assert "import_shutil()" in source
    assert _words_printed_by(_START_WITHOUT_COMPRESSORS) == ["none", "x", "y", "z"]


def test_nothing_of_ours_imports_typing_extensions() -> None:
    """The package's types come from ``typing`` only: msgspec, imported without typing_extensions, reads them with
    ``typing.get_type_hints`` (KEPT_OUT_OF_MSGSPEC)."""
    root = Path(dashfloat.__file__).parent
    users = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name.partition(".")[0] == "typing_extensions" for name in names):
                users.append(str(path.relative_to(root)))
    assert users == []


def test_stopping_a_tree_that_keeps_growing_ends_after_its_passes_and_continues_what_it_stopped() -> None:
    """ADR 0058: each pass of ``stop_descendants`` stops what the one before missed; a tree that shows new
    processes at every pass (a fork bomb racing the walk) is left after ``STOP_PASSES_MAX`` passes, not chased."""
    sleepers = [subprocess.Popen(["sleep", "300"]) for _ in range(STOP_PASSES_MAX + 1)]
    shown = iter([[p.pid] for p in sleepers])
    try:
        stopped = stop_descendants(below=lambda: next(shown))
        assert stopped == [p.pid for p in sleepers[:STOP_PASSES_MAX]]  # one new process a pass, the last not reached
        assert wait_for(lambda: all(_status(pid) == psutil.STATUS_STOPPED for pid in stopped))
        assert _status(sleepers[-1].pid) != psutil.STATUS_STOPPED
        continue_processes(stopped)
        assert wait_for(lambda: all(_status(p.pid) != psutil.STATUS_STOPPED for p in sleepers))
        assert stop_descendants(below=lambda: [sleepers[0].pid]) == [sleepers[0].pid]  # a pass with nothing new ends
    finally:
        for p in sleepers:
            p.kill()
            p.wait()


def _status(pid: int) -> str:
    return str(psutil.Process(pid).status())


_STRAYS = r"""
import json, os, subprocess, sys, time
from dashfloat.procutil import become_subreaper, descendants, kill_strays, _below, _process_table
become_subreaper()
keep = subprocess.Popen(["sleep", "3600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# A daemon out of its session, a background job, and a process holding a zombie child it never reaps (`true &`
# forks; `exec sleep` never waits): their parent is gone at once, so all of them are orphans, re-parented to us.
# Their output goes nowhere: one left holding the test's pipe would keep it waiting.
quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
subprocess.run(["sh", "-c", "setsid sleep 3601 & sleep 3602 & (true & exec sleep 3603) &"], check=True, **quiet)
def settled():
    children, states = _process_table()
    below = _below(children, os.getpid(), {keep.pid})
    return len(below) == 4 and [states.get(p) for p in below].count(b"Z") == 1
try:
    while not settled():
        time.sleep(0.01)
    killed = kill_strays([keep.pid], int(sys.argv[1]))
    left = descendants(os.getpid(), {keep.pid})
    alive = keep.poll() is None
finally:
    keep.kill()
    keep.wait()
    kill_strays([])
print(json.dumps([killed, left, alive]))
"""


@pytest.mark.parametrize("passes", [1, None])
def test_kill_strays_kills_and_reaps_what_came_up_to_a_subreaper_but_what_it_keeps(passes: int | None) -> None:
    # The agent above a SIGKILLed executor (ADR 0057 §2). One pass (below STRAYS_MAX_PASSES) kills the three live
    # ones but cannot reap a zombie that comes up only once its parent died; the default leaves nothing below us.
    from dashfloat.procutil import STRAYS_MAX_PASSES

    arg = str(passes or STRAYS_MAX_PASSES)
    done = subprocess.run([sys.executable, "-c", _STRAYS, arg], capture_output=True, text=True, timeout=60, check=True)
    killed, left, kept_alive = json.loads(done.stdout)
    assert killed == 3 and kept_alive is True
    if passes == 1:
        assert left != []
    else:
        assert left == []


def test_a_package_kept_out_is_imported_after_all_when_the_import_needs_it(tmp_path: Path) -> None:
    """``import_without`` keeps an optional package out; a module that needs it (a future msgspec) still imports,
    as installed, rather than failing the start."""
    (tmp_path / "optional_user.py").write_text(
        "try:\n    import typing_extensions\nexcept ImportError:\n    typing_extensions = None\n"
    )
    (tmp_path / "needy_user.py").write_text("import typing_extensions\n")
    script = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from dashfloat._startup.kept_out import import_without\n"
        "kept = frozenset({'typing_extensions'})\n"
        "import_without('optional_user', kept)\n"
        "import optional_user\n"
        "print(optional_user.typing_extensions is None, 'typing_extensions' in sys.modules)\n"
        "import_without('needy_user', kept)\n"
        "import needy_user\n"
        "print(needy_user.typing_extensions is sys.modules['typing_extensions'], len(sys.meta_path))\n"
    )
    plain = _words_printed_by("import sys; print(len(sys.meta_path))")
    assert _words_printed_by(script) == ["True", "False", "True", *plain]  # and no finder left behind


_CHILDLESS = r"""
import json, subprocess
from dashfloat.procutil import has_children, kill_descendants, kill_strays, _process_table
reads = []
def table():
    reads.append(1)
    return _process_table()
counts = [has_children()]
kill_descendants(table)
kill_strays([], table=table)
counts.append(len(reads))
child = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
counts.append(has_children())
kill_descendants(table)
child.wait()
counts += [len(reads), child.returncode]
print(json.dumps(counts))
"""


def test_without_a_child_the_stop_kills_read_no_proc_and_with_one_they_do() -> None:
    # An executor that ran no command and an agent whose workers are reaped stop without a walk of /proc (ADR 0059);
    # a process with a child still has it killed. A fresh interpreter: the test process has children of its own.
    had, reads_childless, has, reads_after, code = json.loads(" ".join(_words_printed_by(_CHILDLESS)))
    assert (had, reads_childless) == (False, 0)
    assert has is True and reads_after == 2 and code == -signal.SIGKILL  # both passes of kill_descendants


_JOB_SIGNALS = [signal.SIGTSTP, signal.SIGCONT, signal.SIGTERM, signal.SIGCHLD]


@given(st.lists(st.lists(st.sampled_from(_JOB_SIGNALS), max_size=6), max_size=6))
def test_the_fg_watch_says_what_the_last_stop_or_continue_said(batches: list[list[signal.Signals]]) -> None:
    """ADR 0095: however the numbers arrive (one read or several), the state is the last SIGTSTP or SIGCONT's."""
    watch = FgWatch()
    for batch in batches:
        watch.read(bytes(batch))
    job_signals = [s for batch in batches for s in batch if s in (signal.SIGTSTP, signal.SIGCONT)]
    assert watch.continued is (not job_signals or job_signals[-1] == signal.SIGCONT)


def _wait_in_a_handler(report: Connection) -> None:
    watch = FgWatch()

    def on_sigtstp(signum: int, frame: types.FrameType | None) -> None:
        report.send("stopping")
        time.sleep(0.2)  # the handler's work (stopping the commands): an fg may come meanwhile
        watch.wait_for_fg()
        report.send("continued")

    watch.install(on_sigtstp)
    report.send("ready")
    while True:
        time.sleep(1)


def test_the_fg_watch_returns_on_a_sigcont_that_came_before_it_waited_or_after() -> None:
    """A SIGCONT that comes before the handler waits is not lost; one that comes while it waits ends the wait. (A
    SIGCONT sent before the SIGTSTP reached the process at all discards it: the kernel's rule, no handler runs.)"""
    ours, theirs = FORK.Pipe()
    child = _started(_wait_in_a_handler, theirs)
    try:
        assert ours.poll(10) and ours.recv() == "ready"
        assert child.pid is not None
        os.kill(child.pid, signal.SIGTSTP)
        assert ours.poll(10) and ours.recv() == "stopping"
        os.kill(child.pid, signal.SIGCONT)  # while the handler works, before it waits: not lost
        assert ours.poll(10) and ours.recv() == "continued"
        os.kill(child.pid, signal.SIGTSTP)
        assert ours.poll(10) and ours.recv() == "stopping"
        assert not ours.poll(0.5)  # waits: no fg yet
        os.kill(child.pid, signal.SIGCONT)
        assert ours.poll(10) and ours.recv() == "continued"
    finally:
        child.kill()
        child.join(10)


def test_the_fg_watch_reads_past_a_full_read_to_the_last_number() -> None:
    """A pipe holding more than one read's worth (a command spamming SIGCONT with the sandbox off): the state is the
    last number's, not the first read's."""
    watch = FgWatch()
    os.write(watch._write_end, bytes([signal.SIGCONT]) * 5000 + bytes([signal.SIGTSTP]))
    watch._drain(0)
    assert watch.continued is False
    os.write(watch._write_end, bytes([signal.SIGCONT]))
    watch.wait_for_fg()  # returns: the SIGCONT is there
    assert watch.continued is True


def _watch_with_a_forked_child(report: Connection) -> None:
    watch = FgWatch()
    me = os.getpid()

    def on_sigtstp(signum: int, frame: types.FrameType | None) -> None:
        if os.getpid() == me:  # the child's run of it says nothing: its state does
            report.send("stopping")
        watch.wait_for_fg()
        if os.getpid() == me:
            report.send("continued")

    watch.install(on_sigtstp)
    child = os.fork()
    if child == 0:  # a fork that keeps the handler, as the path index's walker does
        while True:
            time.sleep(1)
    report.send(child)
    while True:
        time.sleep(1)


def test_a_forked_child_that_kept_the_handler_stops_itself_and_never_reads_our_pipe() -> None:
    """A child forked with the handler (the path index's walker) read the shared pipe on its own Ctrl-Z: it could take
    the executor's fg. It stops as the default action would, and its later signals stay out of our pipe."""
    ours, theirs = FORK.Pipe()
    parent = _started(_watch_with_a_forked_child, theirs)
    assert ours.poll(10)
    child = psutil.Process(ours.recv())
    try:
        os.kill(child.pid, signal.SIGTSTP)
        assert wait_for(lambda: child.status() == psutil.STATUS_STOPPED)
        os.kill(child.pid, signal.SIGCONT)
        assert wait_for(lambda: child.status() != psutil.STATUS_STOPPED)
        assert parent.pid is not None
        os.kill(parent.pid, signal.SIGTSTP)
        assert ours.poll(10) and ours.recv() == "stopping"
        os.kill(child.pid, signal.SIGCONT)  # the child's: not the parent's fg
        assert not ours.poll(0.5)
        os.kill(parent.pid, signal.SIGCONT)
        assert ours.poll(10) and ours.recv() == "continued"
    finally:
        child.kill()
        parent.kill()
        parent.join(10)
