"""The idle memory rows of `make bench` on their own, per process, and side by side for other source trees.

`python -m bench.idle_memory [--starts N] [--tui] [TREE ...]`: each TREE (a directory holding a ``dashfloat``
package, e.g. ``git archive <commit> dashfloat | tar -x -C TREE``; none: this checkout) is started in turn, start
after start, so the machine's state falls on all alike. Read as `make bench` reads them (bench/speed.py: 2 s after
start, a request in flight; the TUI 2 s after its prompt shows), plus one figure the machine cannot move:

- PSS: what the rows report. A page shared with a process outside the tree counts as a share of it, so the figure
  moves with what else runs (by 1-2 MB on a shared machine: other Python processes map the same interpreter and
  libraries).
- USS: each process's private memory.
- own: every page resident in any process of the tree, counted once, divided among the tree's processes that map
  it (read from /proc/PID/pagemap, which needs root for page numbers): the tree's own footprint, whatever else runs.

Writes nothing; bench/results.md stays `make bench`'s.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import statistics
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import psutil

from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event
from tests.e2e import isolated_environment
from tests.pty_harness import Terminal

READ_AFTER_S = 2.0  # as bench/speed.py reads them
PROMPT_GLYPH = "❯"
CHECKOUT = Path(__file__).resolve().parent.parent
_PAGE = os.sysconf("SC_PAGE_SIZE")
_PFN_MASK = (1 << 55) - 1
_PRESENT = 1 << 63

Reading = dict[str, tuple[float, float, float]]
"""Per process (``main`` or its name): PSS, USS and own MB."""


def _frames(pid: int) -> set[int]:
    """The physical page numbers of ``pid``'s resident pages (empty without the rights to read them)."""
    found: set[int] = set()
    with contextlib.suppress(OSError), open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pages:
        for line in maps:
            if line.rstrip().endswith("[vsyscall]"):
                continue
            start, end = (int(bound, 16) for bound in line.split()[0].split("-"))
            pages.seek(start // _PAGE * 8)
            for (entry,) in struct.iter_unpack("Q", pages.read((end - start) // _PAGE * 8)):
                if entry & _PRESENT:
                    found.add(entry & _PFN_MASK)
    return found


def read_tree(pid: int) -> Reading:
    """PSS, USS and own MB of ``pid`` and each process below it."""
    root = psutil.Process(pid)
    memory: dict[str, tuple[float, float]] = {}
    frames: dict[str, set[int]] = {}
    for process in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            name = "main" if process is root else process.name()
            info = process.memory_full_info()
            memory[name] = (getattr(info, "pss", 0) / 2**20, info.uss / 2**20)
            frames[name] = _frames(process.pid)
    mapped = collections.Counter(frame for each in frames.values() for frame in each)
    return {
        name: (pss, uss, sum(1 / mapped[frame] for frame in frames[name]) * _PAGE / 2**20)
        for name, (pss, uss) in memory.items()
    }


def _environment(tree: Path, state: Path) -> dict[str, str]:
    env = isolated_environment(state)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), sysconfig.get_paths()["purelib"]])
    return env


def _argv(tree: Path, server: ScriptedServer, cwd: Path, *extra: str) -> list[str]:
    # -P: the tree's package, not the current directory's (this checkout's, for `python -m`).
    command = [sys.executable, "-P"] if tree != CHECKOUT else [sys.executable]
    return [*command, "-m", "dashfloat", "--cwd", str(cwd), "--base-url", server.base_url, "--model", "m", *extra]


def headless_start(tree: Path, server: ScriptedServer, cwd: Path, env: dict[str, str]) -> Reading:
    """One headless start read 2 s after it began, its request in flight (the server pauses mid-answer)."""
    server.enqueue(Reply(body=[sse_event({"choices": []}), Pause(5.0)]))
    started = subprocess.Popen(
        _argv(tree, server, cwd, "-p", "wait"),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(READ_AFTER_S)
        return read_tree(started.pid)
    finally:
        started.kill()
        started.wait()


def tui_start(tree: Path, server: ScriptedServer, cwd: Path, env: dict[str, str]) -> Reading | None:
    """One TUI start read 2 s after its prompt shows (None: no prompt)."""
    term = Terminal(_argv(tree, server, cwd), env, cols=100, rows=30)
    try:
        if not term.wait_for(PROMPT_GLYPH, visible_only=True, timeout_s=20):
            return None
        time.sleep(READ_AFTER_S)
        return read_tree(term.pid)
    finally:
        term.close()


def summary(label: str, readings: list[Reading]) -> str:
    """Medians of the totals and of each process's figures, and each process's private memory at every start, in
    order (a process's figure can be bimodal: a median alone hides it; the agent's and the executor's go in pairs)."""
    lines = []
    totals = [[sum(each[i] for each in reading.values()) for reading in readings] for i in range(3)]
    lines.append(
        f"{label}: PSS {statistics.median(totals[0]):.2f} MB (each start: {', '.join(f'{t:.2f}' for t in totals[0])}), "
        f"own {statistics.median(totals[2]):.2f} MB"
    )
    for name in readings[0]:
        column = [reading[name] for reading in readings if name in reading]
        pss, uss, own = (statistics.median(values[i] for values in column) for i in range(3))
        each = " ".join(f"{values[1]:.2f}" for values in column)
        lines.append(f"  {name:16} PSS {pss:6.2f}  USS {uss:6.2f}  own {own:6.2f}  (USS of each start: {each})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="*", type=Path, help="source trees to compare (default: this checkout)")
    parser.add_argument("--starts", type=int, default=5, help="starts per tree and row (the median is reported)")
    parser.add_argument("--tui", action="store_true", help="the TUI row too")
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.trees] or [CHECKOUT]
    rows = ["headless", "tui"] if args.tui else ["headless"]
    found: dict[tuple[str, Path], list[Reading]] = {(row, tree): [] for row in rows for tree in trees}
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer() as server:
        cwd = Path(tmp) / "work"
        cwd.mkdir()
        (cwd / "a.txt").write_text("hello\n")
        env = {tree: _environment(tree, Path(tmp)) for tree in trees}
        for _ in range(args.starts):
            for tree in trees:
                found["headless", tree].append(headless_start(tree, server, cwd, env[tree]))
                if args.tui and (reading := tui_start(tree, server, cwd, env[tree])) is not None:
                    found["tui", tree].append(reading)
    for (row, tree), readings in found.items():
        if readings:
            print(summary(f"{row} {tree}", readings))


if __name__ == "__main__":
    main()
