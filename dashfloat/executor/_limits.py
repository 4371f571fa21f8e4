"""Every bound the executor enforces (seed record §2), with units in the names."""

from __future__ import annotations

from typing import Final

# What the model is told is defined once, beside the tool descriptions built from it.
from dashfloat.catalogue import (
    EXEC_OUTPUT_HEAD_BYTES,
    EXEC_OUTPUT_MAX_BYTES,
    EXEC_OUTPUT_TAIL_BYTES,
    EXEC_TIMEOUT_DEFAULT_S,
    LIST_MAX_ENTRIES,
    READ_MAX_BYTES,
    READ_MAX_LINES,
)

__all__ = [
    "EXEC_OUTPUT_HEAD_BYTES",
    "EXEC_OUTPUT_MAX_BYTES",
    "EXEC_OUTPUT_TAIL_BYTES",
    "LIST_MAX_ENTRIES",
    "READ_MAX_BYTES",
    "READ_MAX_LINES",
]

EXEC_TIMEOUT_S: Final = EXEC_TIMEOUT_DEFAULT_S
# Live output of a running command (never the model's result): one chunk per interval at most, of at most
# this many bytes (its newest); 10 a second is under the UI's 30 frames a second and reads as live.
LIVE_CHUNK_MAX_BYTES: Final = 4 * 1024
LIVE_INTERVAL_S: Final = 0.1
READ_STREAM_THRESHOLD_BYTES: Final = 256 * 1024
EDIT_MAX_FILE_BYTES: Final = 8 * 1024 * 1024
PREVIEW_MAX_LINES: Final = 50
# The full preview a confirmation can open (the whole diff, written content or command): beyond this many bytes
# it is cut with a marker naming what was left out.
PREVIEW_FULL_MAX_BYTES: Final = 4 * 1024 * 1024
# edit_file stops counting ambiguous matches here (a one-byte search in 8 MiB would count millions).
LOCATE_MAX_COUNT: Final = 1000

# After the shell exits, a descendant still holding the output pipe gets this long, then is killed: the
# result arrives promptly instead of at the timeout (in the sandbox the PID namespace has killed it already).
EXEC_DRAIN_AFTER_EXIT_S: Final = 0.5
# A command's bounds (ADR 0057 §1, _confine.py): processes and threads at once (a cgroup's pids.max, where this machine
# lets us make one), memory of all its processes together (a memory cgroup, same condition), and each process's heap
# and anonymous memory (RLIMIT_DATA, everywhere). Far above what builds, test suites and compilers use here
# (`make -j`, `pytest -n`, rustc: hundreds of threads, a few GiB), far below what takes this machine down.
COMMAND_MAX_PROCESSES: Final = 4096
COMMAND_MAX_MEMORY_BYTES: Final = 16 * 1024**3
COMMAND_MAX_MEMORY_SHARE: Final = 0.75  # of the machine's memory, where that is less than COMMAND_MAX_MEMORY_BYTES
COMMAND_MAX_DATA_BYTES: Final = 8 * 1024**3
# The largest file one process of a command may write (RLIMIT_FSIZE, everywhere): a runaway `yes > f` stops there
# instead of filling the disk; far above a build's artefacts (a debug binary, a packfile, a tarball: a few GiB).
COMMAND_MAX_FILE_BYTES: Final = 16 * 1024**3
# How long a killed command's shell may take to be reaped; SIGKILL makes this effectively instant.
REAP_TIMEOUT_S: Final = 1.0
# One os.read of command output; large reads keep a gigabyte flood cheap to drain.
EXEC_READ_CHUNK_BYTES: Final = 1024 * 1024
# The target's name inside a temp file's name, cut by bytes so the temp name stays under NAME_MAX (255).
TEMP_NAME_BASE_MAX_BYTES: Final = 100
# One JSON line of the standalone executor (a write_file of a large file fits; a runaway line does not).
STANDALONE_LINE_MAX_BYTES: Final = 32 * 1024 * 1024

# Checkpoints (docs/sessions.md "Checkpoints"): the pre-images one session may keep, in all, before the oldest
# are dropped; a file larger than the per-file cap is recorded as not restorable instead of being copied.
CHECKPOINT_STORE_MAX_BYTES: Final = 256 * 1024 * 1024
CHECKPOINT_FILE_MAX_BYTES: Final = 16 * 1024 * 1024
# The checkpoints of all sessions together (ADR 0070): past this, opening a session's store prunes other sessions'
# stores, whole, least recently used first, until the rest fit. Eight per-session caps: the current session can fill
# its own store while the seven most recently used full ones stay (a usual store holds kilobytes to a few MiB, so in
# practice hundreds of sessions keep their undo), and 2 GiB is small beside a developer's disk.
CHECKPOINTS_TOTAL_MAX_BYTES: Final = 8 * CHECKPOINT_STORE_MAX_BYTES
# One pruning pass measures or removes at most this many stores (a store whose size an earlier pass recorded and whose
# objects have not changed since costs one stat and is not counted): a session's first write never waits on a walk
# through hundreds of stores; a later pass goes on where this one stopped.
CHECKPOINTS_PRUNE_MAX_STORES: Final = 32
# A session holds a shared lock on its store for the executor's life (released by the kernel however it dies); a
# pruner holds the exclusive one only while it renames a store away. Opening a store tries this many times, this far
# apart, then goes on without the lock rather than wait on whoever holds it.
CHECKPOINT_LOCK_TRIES: Final = 20
CHECKPOINT_LOCK_RETRY_S: Final = 0.01
# A command's changes are told by comparing size and mtime of the workspace's files before and after it: a
# workspace with more files than this is not scanned (the changes are "unknown"), and at most this many
# changed paths are named.
COMMAND_SCAN_MAX_FILES: Final = 10_000
COMMAND_CHANGES_MAX_PATHS: Final = 50

# @ completion (docs/decisions/0032-path-mentions.md): the file index holds at most this many paths and takes at
# most this long to build (git ls-files or the walk stop there and say so); a query answers at most this many
# candidates; a query longer than this is refused (nobody types it; compiling its pattern is not free).
PATH_INDEX_MAX_ENTRIES: Final = 50_000
PATH_INDEX_MAX_WALK_S: Final = 1.0
# The walk (no git) runs in a child killed this long after that deadline: one .gitignore pattern can take
# exponential time inside a single regex match, where no check between entries can stop it.
PATH_INDEX_KILL_GRACE_S: Final = 0.25
PATH_CANDIDATES_MAX: Final = 20
PATH_QUERY_MAX_CHARS: Final = 512
# The index is rebuilt when a new mention begins and it is older than this (files made outside DashFloat show
# up), and after any write, edit or command the executor ran; otherwise one index serves every keystroke.
PATH_INDEX_REFRESH_AGE_S: Final = 10.0
