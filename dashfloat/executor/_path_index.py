"""The workspace's file index for ``@`` completion: built once, bounded, ``.gitignore`` respected.

In a git work tree the index is ``git ls-files --cached --others --exclude-standard`` (git's own reading of
every ignore file, as fast as git is); elsewhere, or when git fails, a breadth-first walk that honours the
``.gitignore`` files it meets (``pathspec``'s gitignore rules). Both stop at PATH_INDEX_MAX_ENTRIES entries
or after PATH_INDEX_MAX_WALK_S, and say so. ``.git`` is never entered; symlinks are listed, never followed.
Directories are entries too, with a trailing ``/``.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import select
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from dashfloat.executor._fuzzy import Corpus, rank
from dashfloat.executor._limits import (
    PATH_INDEX_KILL_GRACE_S,
    PATH_INDEX_MAX_ENTRIES,
    PATH_INDEX_MAX_WALK_S,
    PATH_INDEX_REFRESH_AGE_S,
)
from dashfloat.executor.path_policy import PathError, Root

if TYPE_CHECKING:
    import pathspec

# git may run programs named in the repository's own config (core.fsmonitor); a listing needs none of them.
_GIT_LIST = [
    "git",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "ls-files",
    "-z",
    "--cached",
    "--others",
    "--exclude-standard",
]
_GIT_READ_BYTES = 256 * 1024
_CHILD_FLUSH_S = 0.02


class PathIndex(msgspec.Struct, frozen=True, dict=True):  # dict: for its cached_property
    """The paths of the workspace (directories end in ``/``), sorted; ``notice`` says where it stopped early."""

    paths: list[str]
    built_at: float
    notice: str = ""

    @functools.cached_property
    def corpus(self) -> Corpus:
        """The paths prepared for ranking (once per index, not per key)."""
        return Corpus.of(self.paths)


def _sayable(path: str) -> bool:
    """Whether ``path`` can be typed and sent: a name that is not UTF-8 (surrogate escapes) cannot be either."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _with_directories(files: list[str], max_entries: int) -> tuple[list[str], bool]:
    """The files plus every directory above them, at most ``max_entries`` in all (True: some were left out)."""
    seen: set[str] = set()
    out: list[str] = []
    for path in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            directory = "/".join(parts[:depth]) + "/"
            if directory not in seen:
                seen.add(directory)
                out.append(directory)
        out.append(path)
        if len(out) > max_entries:
            return out[:max_entries], True
    return out, False


class _Bounds(msgspec.Struct, frozen=True):
    """One build's bounds: entries, and the clock and deadline of its time bound."""

    max_entries: int
    max_walk_s: float
    deadline: float
    clock: Callable[[], float]

    def out_of_time(self) -> str:
        return f"the file index stopped after {self.max_walk_s:g} s"

    def out_of_entries(self) -> str:
        return f"the file index stopped at {self.max_entries} entries"


def _git_files(root: str, bounds: _Bounds) -> tuple[list[str], str]:
    """git's listing of the work tree under ``root``; raises OSError when git cannot list it (not a repository)."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    proc = subprocess.Popen(
        _GIT_LIST, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdout is not None
    data = bytearray()
    notice = ""
    try:
        while True:
            left = bounds.deadline - bounds.clock()
            if left <= 0:
                notice = bounds.out_of_time()
                break
            ready, _, _ = select.select([proc.stdout], [], [], left)
            if not ready:
                continue
            chunk = os.read(proc.stdout.fileno(), _GIT_READ_BYTES)
            if not chunk:
                break
            data += chunk
            if data.count(b"\0") > bounds.max_entries:
                break  # enough: the entry bound says so below
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
    if not notice and proc.returncode != 0 and data.count(b"\0") <= bounds.max_entries:
        raise OSError(f"git ls-files exited {proc.returncode}")
    names = [os.fsdecode(name) for name in bytes(data).split(b"\0")[:-1]]
    return [name for name in names if _sayable(name)], notice


def _listing(directory: str, bounds: _Bounds) -> list[os.DirEntry[str]]:
    """One directory's entries by name, read lazily: a directory of a million names stops at the bounds too."""
    entries: list[os.DirEntry[str]] = []
    with os.scandir(directory) as listing:
        for entry in listing:
            entries.append(entry)
            if len(entries) > bounds.max_entries or bounds.clock() >= bounds.deadline:
                break
    return sorted(entries, key=lambda e: e.name)


def _walk_files(root: Root, bounds: _Bounds, emit: Callable[[str], None]) -> str:
    """A breadth-first walk of the root honouring each directory's ``.gitignore``; entries include directories.

    Each entry goes to ``emit`` as it is accepted; the result is the notice (where the walk stopped early).
    """
    import pathspec  # here, not at the top: ~35 ms the executor's start-up does not need (issue 19)

    count = 0
    # (relative directory with trailing "/" or "", the ignore specs in force with the directory each is relative to)
    queue: collections.deque[tuple[str, list[tuple[str, pathspec.GitIgnoreSpec]]]] = collections.deque([("", [])])
    while queue:
        rel, specs = queue.popleft()
        try:
            entries = _listing(os.path.join(root.path, rel) if rel else root.path, bounds)
        except OSError:
            continue
        ignore = next((e for e in entries if e.name == ".gitignore" and e.is_file(follow_symlinks=False)), None)
        if ignore is not None:
            try:
                with open(ignore.path, encoding="utf-8", errors="replace") as f:
                    specs = [*specs, (rel, pathspec.GitIgnoreSpec.from_lines(f.read(_GIT_READ_BYTES).splitlines()))]
            except OSError:
                pass
        for entry in entries:
            if bounds.clock() >= bounds.deadline:
                return bounds.out_of_time()
            if entry.name == ".git" or not _sayable(entry.name):
                continue
            try:
                is_dir = stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode)
            except OSError:
                continue
            path = f"{rel}{entry.name}{'/' if is_dir else ''}"
            if any(spec.match_file(path[len(base) :]) for base, spec in specs):
                continue
            if count == bounds.max_entries:  # one more than the bound holds
                return bounds.out_of_entries()
            emit(path)
            count += 1
            if is_dir:
                queue.append((path, specs))
    return ""


def _walk_in_child(root: Root, bounds: _Bounds) -> tuple[list[str], str]:
    """``_walk_files`` in a forked child that is killed when it overruns the deadline.

    One ``.gitignore`` pattern can take exponential time in a single regex match (``*a*a*a*a*a*a*a*b`` against
    a long name of a's, from a hostile tree), and no check between entries can stop a match; a kill can.
    The child streams each entry (``path\\0``) and ends with an empty record and the notice; what a killed
    child sent in whole records is kept.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - measured through the _exit patch when coverage runs
        try:
            os.close(read_end)
            pending = bytearray()
            flushed = bounds.clock()

            def emit(path: str) -> None:
                nonlocal flushed
                pending.extend(os.fsencode(path) + b"\0")
                if bounds.clock() - flushed >= _CHILD_FLUSH_S:  # what a kill would lose stays small
                    os.write(write_end, pending)
                    pending.clear()
                    flushed = bounds.clock()

            notice = _walk_files(root, bounds, emit)
            with os.fdopen(write_end, "wb") as out:
                out.write(pending + b"\0" + notice.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    data = bytearray()
    finished = False
    try:
        while True:
            left = bounds.deadline + PATH_INDEX_KILL_GRACE_S - bounds.clock()
            if left <= 0:
                break
            ready, _, _ = select.select([read_end], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_end, _GIT_READ_BYTES)
            if not chunk:
                finished = True
                break
            data += chunk
    finally:
        os.close(read_end)
        if not finished:  # (a child that ended its output is leaving: it is waited for, not cut short)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    records = bytes(data).split(b"\0")
    if finished and b"" in records:
        end = records.index(b"")
        return [os.fsdecode(r) for r in records[:end]], b"\0".join(records[end + 1 :]).decode()
    return [os.fsdecode(r) for r in records[:-1]], bounds.out_of_time()


def build_index(
    root: Root,
    max_entries: int = PATH_INDEX_MAX_ENTRIES,
    max_walk_s: float = PATH_INDEX_MAX_WALK_S,
    clock: Callable[[], float] = time.monotonic,
) -> PathIndex:
    """The workspace's paths, bounded in count and time (see the module docstring)."""
    root.check()
    started = clock()
    bounds = _Bounds(max_entries, max_walk_s, started + max_walk_s, clock)
    try:
        files, notice = _git_files(root.path, bounds)
        paths, cut = _with_directories(files, max_entries)
        if cut and not notice:
            notice = bounds.out_of_entries()
    except OSError:
        paths, notice = _walk_in_child(root, bounds)
    return PathIndex(sorted(paths), started, notice)


def stale(index: PathIndex | None, refresh: bool, now: float) -> bool:
    """Whether to (re)build: none yet, or a new mention began and the index is PATH_INDEX_REFRESH_AGE_S old."""
    return index is None or (refresh and now - index.built_at >= PATH_INDEX_REFRESH_AGE_S)


def find_paths(index: PathIndex, root: Root, query: str, limit: int) -> list[str]:
    """The best ``limit`` paths for ``query`` that the path policy lets a tool use (a symlink out is dropped)."""
    found: list[str] = []
    for path in rank(query, index.corpus, limit * 2):
        try:
            root.locate(path)
        except (PathError, OSError):
            continue
        found.append(path)
        if len(found) == limit:
            break
    return found
