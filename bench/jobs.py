"""Background jobs' cost (issue 36, ADR 0080): starting a job and reading its output, through a real executor
process and a real sandbox, against a foreground command of the same line; and a sandboxed command in the session's
network namespace against one with a namespace of its own (what every command paid before).

Run: ``python -m bench.jobs [--quick]`` (not part of ``make bench``'s table: its figures are in ADR 0080)."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

from bench.common import Figure
from dashfloat.agent import ForkWorkers
from dashfloat.channel import Channel
from dashfloat.executor import _session_net
from dashfloat.executor._sandbox import Sandbox
from dashfloat.executor._sandbox_probe import detect
from dashfloat.executor._tools import run as run_call
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import (
    ExecuteCommandArgs,
    ExecutorToAgent,
    JobKillArgs,
    JobOutputArgs,
    RunTool,
    SandboxPolicy,
    SandboxState,
    Shutdown,
    ToolArgs,
    ToolFinished,
)

_calls = 0


def _call(channel: Channel[ExecutorToAgent], args: ToolArgs) -> tuple[float, ToolFinished]:
    """One call to its ToolFinished: milliseconds, and the result."""
    global _calls
    _calls += 1
    call_id = f"b{_calls}"
    start = time.perf_counter()
    channel.send(RunTool(call_id, args))
    while True:
        assert channel.poll(30), "no answer from the executor"
        message = channel.recv()
        if isinstance(message, ToolFinished) and message.call_id == call_id:
            return (time.perf_counter() - start) * 1000, message


def _executor_figures(state: SandboxState, quick: bool) -> list[Figure]:
    rounds = 5 if quick else 30
    with tempfile.TemporaryDirectory() as tmp:
        worker = ForkWorkers(tmp, 30.0, log_path="", held_fds=[], sandbox=state).start_executor()
        channel = worker.channel
        starts, foreground, reads_full, reads_new = [], [], [], []
        try:
            _call(channel, ExecuteCommandArgs(command="true"))  # the session's namespace made, imports warm
            for _ in range(rounds):  # interleaved, so load drifts hit both alike
                took, finished = _call(channel, ExecuteCommandArgs(command="echo up; exec sleep 300", background=True))
                starts.append(took)
                job_id = getattr(finished.result, "job_id", 0)
                foreground.append(_call(channel, ExecuteCommandArgs(command="echo up"))[0])
                _call(channel, JobKillArgs(id=job_id))
            flood = "head -c 4000000 /dev/zero | tr '\\0' a; exec sleep 300"
            _, finished = _call(channel, ExecuteCommandArgs(command=flood, background=True))
            job_id = getattr(finished.result, "job_id", 0)
            time.sleep(1.0)  # the flood read into the ring (a bench, not a test: no assertion hangs on it)
            for _ in range(rounds * 4):
                took, full = _call(channel, JobOutputArgs(id=job_id))
                reads_full.append(took)
                cursor = getattr(full.result, "cursor", 0)
                reads_new.append(_call(channel, JobOutputArgs(id=job_id, cursor=cursor))[0])
            _call(channel, JobKillArgs(id=job_id))
            channel.send(Shutdown())
        finally:
            channel.close()
            worker.process.join(10)
    label = "sandboxed" if state.mode != "off" else "unsandboxed"
    added = statistics.median(starts) - statistics.median(foreground)
    return [
        Figure(
            name=f"a job's start ({label}): `echo up; exec sleep 300` with background, to its result",
            unit="ms",
            samples=starts,
            baseline_name="the foreground `echo up` through the same executor",
            baseline_samples=foreground,
            note=f"median added by starting it as a job: {added:.2f} ms",
        ),
        Figure(
            name=f"job_output of a job whose ring is full (1 MiB kept of 4 MB; {label}), from the start",
            unit="ms",
            samples=reads_full,
            baseline_name="job_output from the last cursor (nothing new)",
            baseline_samples=reads_new,
        ),
    ]


def _namespace_figure(quick: bool) -> Figure:
    """A sandboxed `true` in the session's namespace against one with a namespace of its own."""
    state = detect("workspace-write", False, [], os.environ)
    sandbox = Sandbox.for_session(state, os.environ)
    shared, own = [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Root(tmp)
        try:
            for _ in range(10 if quick else 100):
                _session_net.close_session_net()
                _session_net._session[os.getpid()] = "the bench's own-namespace baseline"
                start = time.perf_counter()
                run_call(ExecuteCommandArgs(command="true"), root, sandbox=sandbox, policy=SandboxPolicy())
                own.append((time.perf_counter() - start) * 1000)
                _session_net._session.pop(os.getpid(), None)
                _session_net.session_net(sandbox.bwrap)  # made once per session, not per command
                start = time.perf_counter()
                run_call(ExecuteCommandArgs(command="true"), root, sandbox=sandbox, policy=SandboxPolicy())
                shared.append((time.perf_counter() - start) * 1000)
        finally:
            _session_net.close_session_net()
            root.close()
    return Figure(
        name="a sandboxed `true` in the session's network namespace",
        unit="ms",
        samples=shared,
        baseline_name="the same with a network namespace of its own (every command before issue 36)",
        baseline_samples=own,
    )


def _holder_figure(quick: bool) -> Figure:
    samples = []
    bwrap = Sandbox.for_session(detect("workspace-write", False, [], os.environ), os.environ).bwrap
    for _ in range(5 if quick else 30):
        start = time.perf_counter()
        net = _session_net.SessionNet(bwrap)
        samples.append((time.perf_counter() - start) * 1000)
        net.close()
    return Figure(name="the session namespace's holder start (once per session)", unit="ms", samples=samples)


def run(quick: bool) -> list[Figure]:
    figures = _executor_figures(detect("workspace-write", False, [], os.environ), quick)
    figures += _executor_figures(SandboxState(), quick)
    return [*figures, _namespace_figure(quick), _holder_figure(quick)]


if __name__ == "__main__":
    for figure in run(quick="--quick" in sys.argv):
        base = f"; baseline {statistics.median(figure.baseline_samples):.2f}" if figure.baseline_samples else ""
        print(f"{figure.name}: median {figure.median():.2f} {figure.unit} (p90 {figure.quantile(0.9):.2f}){base}")
        if figure.note:
            print(f"  {figure.note}")
