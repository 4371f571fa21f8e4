"""Executor costs: `true` round trip, cancel latency, 1 GB output flood, 100k lines of live output, 1 GB sparse read."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.common import Figure
from dashfloat.channel import Channel
from dashfloat.executor import detect_sandbox, run_command, serve
from dashfloat.protocol import (
    MSGPACK_ENCODER,
    CancelTool,
    CommandExited,
    CommandOutput,
    CommandStarted,
    ExecuteCommandArgs,
    ExecutorToAgent,
    ReadFileArgs,
    ReadFileResult,
    RunTool,
    SandboxState,
    Shutdown,
    ToolCancelled,
    ToolFinished,
)

GIB = 1 << 30
MIB = 1 << 20
_REPLY_TIMEOUT_S = 120.0

Agent = Channel[ExecutorToAgent]


@contextmanager
def _executor(root: Path, sandbox: SandboxState | None = None) -> Iterator[tuple[Agent, int]]:
    """A real executor process on a real pipe, as the runtime starts it (no sandbox unless given)."""
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=serve, args=(theirs, str(root), _REPLY_TIMEOUT_S, sandbox), daemon=True)
    proc.start()
    theirs.close()
    assert proc.pid is not None
    try:
        yield Channel(ours, ExecutorToAgent, "executor->agent"), proc.pid
    finally:
        ours.send_bytes(MSGPACK_ENCODER.encode(Shutdown()))  # a forked child holds a copy of `ours`: no EOF
        ours.close()
        proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join()


def _finished(channel: Agent) -> ToolFinished:
    while True:
        if not channel.poll(_REPLY_TIMEOUT_S):
            raise RuntimeError("the executor did not answer")
        msg = channel.recv()
        if isinstance(msg, ToolFinished):
            return msg


def _peak_rss_mib(pid: int) -> float:
    """VmHWM: the process's peak resident set so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc (not Linux?)")


def _round_trip(root: Path, quick: bool) -> Figure:
    samples, baseline = [], []
    with _executor(root) as (channel, _):
        for i in range(20 if quick else 200):
            start = time.perf_counter()
            channel.send(RunTool(f"t{i}", ExecuteCommandArgs(command="true")))
            exited = _finished(channel).result
            if not isinstance(exited, CommandExited) or exited.exit_code != 0:
                raise RuntimeError("`true` failed")
            samples.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            subprocess.run(["/bin/sh", "-c", "true"], check=True)
            baseline.append((time.perf_counter() - start) * 1000)
    median = sorted(samples)[len(samples) // 2]
    return Figure(
        name="execute_command `true`: RunTool -> ToolFinished through serve over a real pipe",
        unit="ms",
        samples=samples,
        baseline_name="subprocess.run(['/bin/sh', '-c', 'true']) in-process",
        baseline_samples=baseline,
        target="≤ 20 ms",
        met=median <= 20,
    )


def _sandbox_cost(root: Path, quick: bool) -> Figure:
    """`true` through serve in the default workspace-write sandbox vs. the same executor with --sandbox off."""
    state = detect_sandbox("workspace-write", False, [], os.environ)
    if state.unavailable:
        raise RuntimeError(f"this machine cannot sandbox: {state.unavailable}")
    samples: list[float] = []
    baseline: list[float] = []
    with _executor(root, state) as (boxed, _), _executor(root, SandboxState(mode="off")) as (bare, _):
        for i in range(20 if quick else 200):  # interleaved, so load drifts hit both alike
            for channel, into in ((boxed, samples), (bare, baseline)):
                start = time.perf_counter()
                channel.send(RunTool(f"s{i}", ExecuteCommandArgs(command="true")))
                exited = _finished(channel).result
                if not isinstance(exited, CommandExited) or exited.exit_code != 0:
                    raise RuntimeError(f"`true` failed: {exited}")
                into.append((time.perf_counter() - start) * 1000)
    added = statistics.median(samples) - statistics.median(baseline)
    return Figure(
        name="execute_command `true` in the workspace-write sandbox (bwrap), through serve",
        unit="ms",
        samples=samples,
        baseline_name="the same through serve with --sandbox off",
        baseline_samples=baseline,
        target="≤ 20 ms added at the median",
        met=added <= 20,
        note=f"median added by the sandbox: {added:.1f} ms",
    )


def _cancel(root: Path, quick: bool) -> Figure:
    samples = []
    with _executor(root) as (channel, _):
        for i in range(5 if quick else 30):
            channel.send(RunTool(f"c{i}", ExecuteCommandArgs(command="sleep 300")))
            if not isinstance(channel.recv(), CommandStarted):
                raise RuntimeError("no CommandStarted")
            start = time.perf_counter()
            channel.send(CancelTool(f"c{i}"))
            if not isinstance(_finished(channel).result, ToolCancelled):
                raise RuntimeError("not cancelled")
            samples.append((time.perf_counter() - start) * 1000)
    return Figure(
        name="cancel a running command: CancelTool -> ToolFinished(cancelled)",
        unit="ms",
        samples=samples,
        target="≤ 100 ms (seed record)",
        met=max(samples) <= 100,
        note="worst sample held to the target",
    )


def _flood(root: Path, quick: bool) -> list[Figure]:
    size = 128 * MIB if quick else GIB
    command = f"head -c {size} /dev/zero"
    with _executor(root) as (channel, pid):
        before = _peak_rss_mib(pid)
        start = time.perf_counter()
        channel.send(RunTool("f", ExecuteCommandArgs(command=command)))
        result = _finished(channel).result
        seconds = time.perf_counter() - start
        peak = _peak_rss_mib(pid)
    if not isinstance(result, CommandExited) or result.output.total_bytes != size:
        raise RuntimeError(f"flood not fully drained: {result}")
    start = time.perf_counter()
    subprocess.run(["/bin/sh", "-c", f"{command} | cat > /dev/null"], check=True)
    pipe_s = time.perf_counter() - start
    note = f"{size // MIB} MiB of output" + (" (quick mode: 128 MiB, not 1 GiB)" if quick else "")
    return [
        Figure(
            name="execute_command output flood: time to drain and answer",
            unit="s",
            samples=[seconds],
            baseline_name="the same flood through `| cat > /dev/null`",
            baseline_samples=[pipe_s],
            note=note,
        ),
        Figure(
            name="execute_command output flood: executor peak RSS",
            unit="MiB",
            samples=[peak],
            baseline_name="executor peak RSS before the flood",
            baseline_samples=[before],
            target="flat: ≤ 16 MiB above the idle executor",
            met=peak - before <= 16,
            note=note,
        ),
    ]


# 100k lines written one `echo` at a time: many small writes, so many wake-ups and live chunks.
_LINES_100K = "i=0; while [ $i -lt 100000 ]; do echo line $i; i=$((i+1)); done"


def _live_output(root: Path, quick: bool) -> list[Figure]:
    """A command printing 100k lines through serve (live chunks sent) vs the same capture loop without them."""
    runs = 1 if quick else 3
    samples, baseline, chunks = [], [], []
    with _executor(root) as (channel, pid):
        before = _peak_rss_mib(pid)
        for i in range(runs):
            start = time.perf_counter()
            channel.send(RunTool(f"l{i}", ExecuteCommandArgs(command=_LINES_100K)))
            count = 0
            while True:
                if not channel.poll(_REPLY_TIMEOUT_S):
                    raise RuntimeError("the executor did not answer")
                msg = channel.recv()
                if isinstance(msg, CommandOutput):
                    count += 1
                elif isinstance(msg, ToolFinished):
                    break
            samples.append(time.perf_counter() - start)
            chunks.append(count)
            exited = msg.result
            if not isinstance(exited, CommandExited) or exited.output.total_bytes < 100_000 * 6:
                raise RuntimeError(f"short output: {exited}")
        peak = _peak_rss_mib(pid)
    for _ in range(runs):
        start = time.perf_counter()
        run_command(_LINES_100K, str(root), _REPLY_TIMEOUT_S)  # no live tail, no pipe: the capture alone
        baseline.append(time.perf_counter() - start)
    seconds = statistics.median(samples)
    note = f"{max(chunks)} live chunks at most per run (≤ 10/s by LIVE_INTERVAL_S)"
    return [
        Figure(
            name="live output of a command printing 100k lines: time through serve",
            unit="s",
            samples=samples,
            baseline_name="the same command through the capture loop in-process, no live chunks",
            baseline_samples=baseline,
            target="≤ 1.1× the capture alone",
            met=seconds <= 1.1 * statistics.median(baseline),
            note=note,
        ),
        Figure(
            name="live output of a command printing 100k lines: executor peak RSS",
            unit="MiB",
            samples=[peak],
            baseline_name="executor peak RSS before the runs",
            baseline_samples=[before],
            target="flat: ≤ 16 MiB above the idle executor",
            met=peak - before <= 16,
            note=note,
        ),
    ]


def _sparse_read(root: Path, quick: bool) -> list[Figure]:
    big = root / "sparse.bin"
    with open(big, "wb") as f:
        f.write(b"".join(b"line %d\n" % i for i in range(1, 1001)))
        f.seek(GIB)
        f.write(b"\ntail 1\ntail 2\n")
    samples = []
    with _executor(root) as (channel, pid):
        before = _peak_rss_mib(pid)
        for i in range(2 if quick else 5):
            start = time.perf_counter()
            channel.send(RunTool(f"r{i}", ReadFileArgs(path="sparse.bin", offset=1002)))
            result = _finished(channel).result
            samples.append(time.perf_counter() - start)
            if not isinstance(result, ReadFileResult) or result.content != "tail 1\ntail 2\n":
                raise RuntimeError(f"wrong window: {result}")
        peak = _peak_rss_mib(pid)
    note = "1 GiB sparse file: 1 000 lines, a 1 GiB line of zeros, then the 2-line window read"
    return [
        Figure(name="read_file window at the end of a 1 GiB file: time", unit="s", samples=samples, note=note),
        Figure(
            name="read_file window at the end of a 1 GiB file: executor peak RSS",
            unit="MiB",
            samples=[peak],
            baseline_name="executor peak RSS before the reads",
            baseline_samples=[before],
            target="flat: ≤ 16 MiB above the idle executor",
            met=peak - before <= 16,
            note=note,
        ),
    ]


def run(quick: bool) -> list[Figure]:
    """The executor figures, each against a fresh executor process."""
    root = Path(tempfile.mkdtemp(prefix="dashfloat-bench-executor-"))
    try:
        return [
            _round_trip(root, quick),
            _sandbox_cost(root, quick),
            _cancel(root, quick),
            *_flood(root, quick),
            *_live_output(root, quick),
            *_sparse_read(root, quick),
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    import sys

    for fig in run(quick="--quick" in sys.argv):
        base = ""
        if fig.baseline_samples:
            base = f" ({fig.baseline_name}: {sorted(fig.baseline_samples)[len(fig.baseline_samples) // 2]:.3f})"
        print(f"{fig.name}: median {fig.median():.3f} {fig.unit}{base}; target {fig.target or '-'} met={fig.met}")
