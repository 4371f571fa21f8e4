"""Checkpoint costs: a 100 KiB write with and without its pre-image kept; undoing a 50-file turn.

Both run against a real executor process over a real pipe, as the agent drives it: RunTool with and without
``checkpoint_store``; PreviewRestore then ApplyRestore for the undo (what /undo costs once the user said y).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import TypeVar

from bench.common import Figure
from bench.executor import Agent, _executor
from dashfloat.protocol import (
    ApplyRestore,
    Checkpoint,
    PreviewRestore,
    RestoreApplied,
    RestoreFile,
    RestorePreviewed,
    RunTool,
    ToolFinished,
    WriteFileArgs,
    WriteFileResult,
)

KIB = 1024
FILE_BYTES = 100 * KIB
TURN_FILES = 50
ADDED_TARGET_MS = 5.0
_REPLY_TIMEOUT_S = 120.0

Reply = TypeVar("Reply", ToolFinished, RestorePreviewed, RestoreApplied)


def _wait(channel: Agent, kind: type[Reply]) -> Reply:
    while True:
        if not channel.poll(_REPLY_TIMEOUT_S):
            raise RuntimeError("the executor did not answer")
        message = channel.recv()
        if isinstance(message, kind):
            return message


def _content(i: int) -> str:
    line = f"line {i:08d} " + "x" * 50 + "\n"
    return (line * (FILE_BYTES // len(line) + 1))[:FILE_BYTES]


def _write(channel: Agent, path: str, content: str, store: str, call: int) -> tuple[float, ToolFinished]:
    started = time.perf_counter()
    channel.send(RunTool(call_id=str(call), args=WriteFileArgs(path=path, content=content), checkpoint_store=store))
    finished = _wait(channel, ToolFinished)
    elapsed = time.perf_counter() - started
    if not isinstance(finished.result, WriteFileResult):
        raise RuntimeError(f"write failed: {finished.result}")
    return elapsed, finished


def _checkpoint_cost(root: Path, store: Path, quick: bool) -> Figure:
    n = 40 if quick else 300
    with _executor(root) as (channel, _):
        (root / "file.txt").write_text(_content(0))
        plain: list[float] = []
        kept: list[float] = []
        for i in range(1, n + 1):
            # interleaved, so load on the machine hits both alike; every write replaces distinct bytes
            plain.append(_write(channel, "file.txt", _content(2 * i), "", i)[0])
            elapsed, finished = _write(channel, "file.txt", _content(2 * i + 1), str(store), -i)
            if finished.checkpoint is None or finished.checkpoint.lost:
                raise RuntimeError(f"no checkpoint kept: {finished.checkpoint}")
            kept.append(elapsed)
    added_ms = (statistics.median(kept) - statistics.median(plain)) * 1000
    return Figure(
        name="write_file of a 100 KiB file, with its checkpoint: round trip",
        unit="ms",
        samples=[s * 1000 for s in kept],
        baseline_name="the same write without checkpoint",
        baseline_samples=[s * 1000 for s in plain],
        target=f"≤ {ADDED_TARGET_MS:g} ms added at the median",
        met=added_ms <= ADDED_TARGET_MS,
        note=f"added at the median: {added_ms:.2f} ms (pre-image read, sha256, object written and fsynced, "
        "the result's digest)",
    )


def _undo_turn(root: Path, store: Path, quick: bool) -> Figure:
    rounds = 3 if quick else 10
    undo_s: list[float] = []
    turn_s: list[float] = []
    with _executor(root) as (channel, _):
        for r in range(rounds):
            for i in range(TURN_FILES):
                (root / f"m{i:02d}.txt").write_text(_content(1000 * r + i))
            started = time.perf_counter()
            checkpoints: list[Checkpoint] = []
            for i in range(TURN_FILES):
                _, finished = _write(channel, f"m{i:02d}.txt", _content(10_000 + i), str(store), i)
                assert finished.checkpoint is not None
                checkpoints.append(finished.checkpoint)
            turn_s.append(time.perf_counter() - started)
            files = [
                RestoreFile(path=c.path, existed=c.existed, expect=c.after, before=c.before, mode=c.mode)
                for c in reversed(checkpoints)
            ]
            started = time.perf_counter()
            channel.send(PreviewRestore(ref=2 * r, store=str(store), files=files))
            previewed = _wait(channel, RestorePreviewed)
            digests = [p.digest for p in previewed.files]
            channel.send(ApplyRestore(ref=2 * r + 1, store=str(store), files=files, digests=digests))
            applied = _wait(channel, RestoreApplied)
            undo_s.append(time.perf_counter() - started)
            if not all(o.ok for o in applied.outcomes):
                raise RuntimeError(f"undo failed: {applied.outcomes}")
            if (root / "m07.txt").read_text() != _content(1000 * r + 7):
                raise RuntimeError("undo did not bring the bytes back")
    return Figure(
        name=f"undo of a {TURN_FILES}-file turn (100 KiB files): reverse preview + restore",
        unit="ms",
        samples=[s * 1000 for s in undo_s],
        baseline_name=f"the turn's own {TURN_FILES} checkpointed writes",
        baseline_samples=[s * 1000 for s in turn_s],
        note="executor side, as after the user's y: diffs of every file, then 50 atomic writes (fsynced)",
    )


def run(quick: bool) -> list[Figure]:
    """The checkpoint figures, each against a fresh executor process and store."""
    base = Path(tempfile.mkdtemp(prefix="dashfloat-bench-checkpoints-"))
    try:
        figures = []
        for name, measure in (("cost", _checkpoint_cost), ("undo", _undo_turn)):
            root, store = base / name / "work", base / name / "store"
            root.mkdir(parents=True)
            figures.append(measure(root, store, quick))
        return figures
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    import sys

    for fig in run(quick="--quick" in sys.argv):
        base = f" ({fig.baseline_name}: {statistics.median(fig.baseline_samples):.3f})" if fig.baseline_samples else ""
        print(f"{fig.name}: median {fig.median():.3f} {fig.unit}{base}; target {fig.target or '-'} met={fig.met}")
        if fig.note:
            print(f"  {fig.note}")
