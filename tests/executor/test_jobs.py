"""Background jobs (issue 36, ADR 0080): a real executor, real bwrap, real servers; the process table checked by pid."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dashfloat.agent import ForkWorkers
from dashfloat.agent._workers import ForkedWorker
from dashfloat.catalogue import JOBS_MAX_RUNNING
from dashfloat.channel import Channel
from dashfloat.executor._jobs import JOB_FINISHED_KEPT, JOB_HEAD_BYTES, JOB_RING_BYTES, Ring, listening_ports
from dashfloat.executor._sandbox_probe import detect
from dashfloat.protocol import (
    CancelTool,
    CommandExited,
    CommandOutput,
    CommandStarted,
    ExecuteCommandArgs,
    ExecutorToAgent,
    ExposeJob,
    JobExited,
    JobExposed,
    JobKillArgs,
    JobOutput,
    JobOutputArgs,
    JobReport,
    JobStarted,
    KillJobs,
    RunTool,
    SandboxState,
    Shutdown,
    ToolCancelled,
    ToolFailed,
    ToolFinished,
)
from tests.e2e import wait_for

REPLY_TIMEOUT_S = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Executor:
    """A real executor process, forked as the agent forks it, and what it sent that the test did not ask for."""

    def __init__(self, root: Path, state: SandboxState) -> None:
        self.worker: ForkedWorker = ForkWorkers(
            str(root), 5.0, log_path="", held_fds=[], sandbox=state
        ).start_executor()
        self.channel: Channel[ExecutorToAgent] = self.worker.channel
        self.events: list[ExecutorToAgent] = []
        self.calls = 0

    @property
    def pid(self) -> int:
        pid = self.worker.process.pid
        assert pid is not None
        return pid

    def next(self) -> ExecutorToAgent:
        assert self.channel.poll(REPLY_TIMEOUT_S), "no message from the executor"
        message = self.channel.recv()
        if not isinstance(message, ToolFinished):
            self.events.append(message)
        return message

    def call(self, args: object, **run: object) -> ToolFinished:
        """Run one call to its ToolFinished; job events on the way are kept in ``events``."""
        self.calls += 1
        call_id = f"c{self.calls}"
        self.channel.send(RunTool(call_id, args, **run))  # type: ignore[arg-type]
        while True:
            message = self.next()
            if isinstance(message, ToolFinished) and message.call_id == call_id:
                return message

    def job(self, command: str, **ready: object) -> JobReport:
        finished = self.call(ExecuteCommandArgs(command=command, background=True, **ready))  # type: ignore[arg-type]
        assert isinstance(finished.result, JobReport), finished.result
        return finished.result

    def exited(self, job_id: int) -> JobExited:
        """Wait for job ``job_id``'s JobExited."""
        while True:
            for message in self.events:
                if isinstance(message, JobExited) and message.job_id == job_id:
                    return message
            self.next()

    def started(self, job_id: int) -> JobStarted:
        found = [m for m in self.events if isinstance(m, JobStarted) and m.job_id == job_id]
        assert found
        return found[0]

    def close(self) -> None:
        self.channel.close()
        self.worker.process.join(REPLY_TIMEOUT_S)
        if self.worker.process.is_alive():
            self.worker.process.kill()
            self.worker.process.join()


@pytest.fixture
def sandboxed(root: Path) -> Iterator[Executor]:
    state = detect("workspace-write", False, [], os.environ)
    assert state.mode == "workspace-write", state.unavailable
    executor = Executor(root, state)
    yield executor
    executor.close()


@pytest.fixture
def unsandboxed(root: Path) -> Iterator[Executor]:
    executor = Executor(root, SandboxState())
    yield executor
    executor.close()


def marked(token: str) -> list[int]:
    """Live pids whose command line holds ``token`` (a job's processes, inside its sandbox or not)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and token in " ".join(proc.info["cmdline"] or []):
            found.append(proc.pid)
    return found


def sleeper(token: str) -> str:
    """A job line whose processes carry ``token`` (a shell, and a sleep that outlives it unless killed)."""
    return f"echo {token}; sh -c 'sleep 300; : {token}' & wait"


# ---------------------------------------------------------------- the ring, pure


def test_the_ring_keeps_head_and_tail_and_says_what_it_dropped() -> None:
    ring = Ring(head_max=4, tail_max=8)
    ring.feed(b"abcdefgh")
    ring.feed(b"ijklmnopqrst")
    assert ring.total == 20 and bytes(ring.head) == b"abcd" and bytes(ring.tail) == b"mnopqrst"
    whole = ring.read(0)
    assert whole.output.startswith("abcd\n[… 8 bytes of the job's output were dropped here")
    assert whole.output.endswith("mnopqrst") and whole.cut_bytes == 8 and whole.truncated
    assert ring.read(16).output == "qrst" and ring.read(16).total_bytes == 4
    assert ring.read(20).output == "" and ring.read(99).output == ""


def test_the_ring_crossing_its_bound_drops_the_middle_and_stays_bounded() -> None:
    ring = Ring()
    ring.feed(b"x" * (JOB_HEAD_BYTES + JOB_RING_BYTES))
    assert ring.dropped() == 0 and len(ring.tail) == JOB_RING_BYTES
    ring.feed(b"y")
    assert ring.dropped() == 1 and len(ring.tail) == JOB_RING_BYTES
    for _ in range(20):
        ring.feed(b"z" * (JOB_RING_BYTES // 2))
    assert len(ring.head) == JOB_HEAD_BYTES and len(ring.tail) == JOB_RING_BYTES


def test_listening_ports_are_read_from_a_proc_table() -> None:
    table = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n"
        "   1: 0100007F:0016 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 2\n"
    )
    assert listening_ports(table) == {8080}


# ---------------------------------------------------------------- a real server, reached from the same session


def test_a_job_serves_http_to_a_later_command_of_the_session_and_to_nothing_else(sandboxed: Executor) -> None:
    port = free_port()
    started = sandboxed.job(f"exec python3 -m http.server {port} --bind 127.0.0.1", ready_port=port)
    assert started.state == "running" and started.ready is True, started
    job = sandboxed.started(started.job_id)
    fetch = f"python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:{port}/').status)\""
    used = sandboxed.call(ExecuteCommandArgs(command=fetch))
    assert isinstance(used.result, CommandExited) and used.result.output.output == "200\n", used.result
    with pytest.raises(urllib.error.URLError):  # the host's loopback is another namespace
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
    read = sandboxed.call(JobOutputArgs(id=started.job_id, cursor=started.cursor))
    assert isinstance(read.result, JobReport) and '"GET / HTTP/1.1" 200' in read.result.output.output
    again = sandboxed.call(JobOutputArgs(id=started.job_id, cursor=read.result.cursor))
    assert isinstance(again.result, JobReport) and again.result.output.output == ""  # only what came after it
    pids = [p.pid for p in psutil.process_iter() if _pgid(p.pid) == job.pgid]
    assert pids
    killed = sandboxed.call(JobKillArgs(id=started.job_id))
    assert isinstance(killed.result, JobReport) and killed.result.state == "killed"
    assert all(not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE for pid in pids)
    assert sandboxed.exited(started.job_id).state == "killed"


def _pgid(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return -1


def test_a_readiness_pattern_waits_for_its_line(unsandboxed: Executor) -> None:
    report = unsandboxed.job("echo booting; sleep 0.2; echo 'ready on 1234'; sleep 300", ready_pattern=r"ready on \d+")
    assert report.ready is True and "ready on 1234" in report.output.output
    unsandboxed.call(JobKillArgs(id=report.job_id))


def test_a_readiness_timeout_returns_the_output_so_far_and_the_job_runs_on(unsandboxed: Executor) -> None:
    token = secrets.token_hex(6)
    report = unsandboxed.job(sleeper(token), ready_pattern="never printed", ready_timeout=0.3)
    assert report.ready is False and report.state == "running" and token in report.output.output
    assert "not ready after 0.3 s" in report.note and "keeps running" in report.note
    assert marked(token)
    unsandboxed.call(JobKillArgs(id=report.job_id))
    assert wait_for(lambda: not marked(token), 10)


def test_a_job_that_ends_before_it_is_ready_says_so(unsandboxed: Executor) -> None:
    report = unsandboxed.job("echo bye; exit 3", ready_port=free_port())
    assert report.ready is False and report.state == "exited" and report.exit_code == 3
    assert "ended before it was ready" in report.note


# ---------------------------------------------------------------- bounds and bad input


def test_the_cap_on_running_jobs_holds_and_names_itself(unsandboxed: Executor) -> None:
    token = secrets.token_hex(6)
    reports = [unsandboxed.job(sleeper(token)) for _ in range(JOBS_MAX_RUNNING)]
    assert all(r.state == "running" for r in reports)
    refused = unsandboxed.call(ExecuteCommandArgs(command="echo one too many", background=True))
    assert isinstance(refused.result, ToolFailed)
    assert f"{JOBS_MAX_RUNNING} background jobs already run, the most at once" in refused.result.error
    unsandboxed.call(JobKillArgs(id=reports[0].job_id))
    again = unsandboxed.job("echo room again")
    assert again.state in ("running", "exited")


def test_an_unknown_job_id_names_the_known_ones(unsandboxed: Executor) -> None:
    none = unsandboxed.call(JobOutputArgs(id=4))
    assert isinstance(none.result, ToolFailed) and "no background job was started" in none.result.error
    report = unsandboxed.job("echo hi")
    unsandboxed.exited(report.job_id)
    missing = unsandboxed.call(JobKillArgs(id=99))
    assert isinstance(missing.result, ToolFailed)
    assert missing.result.error == f"no job 99: the known jobs are {report.job_id} (exited, `echo hi`)"


def test_ended_jobs_past_the_kept_number_are_forgotten(unsandboxed: Executor) -> None:
    first = unsandboxed.job("true")
    unsandboxed.exited(first.job_id)
    for _ in range(JOB_FINISHED_KEPT):
        report = unsandboxed.job("true")
        unsandboxed.exited(report.job_id)
    unsandboxed.job("true")  # the next start forgets the oldest ended one beyond the bound
    forgotten = unsandboxed.call(JobOutputArgs(id=first.job_id))
    assert isinstance(forgotten.result, ToolFailed) and f"no job {first.job_id}:" in forgotten.result.error
    kept = unsandboxed.call(JobOutputArgs(id=first.job_id + 1))
    assert isinstance(kept.result, JobReport) and kept.result.state == "exited"


def test_a_100_mb_flood_keeps_the_executors_memory_flat(unsandboxed: Executor) -> None:
    executor = psutil.Process(unsandboxed.pid)
    warm = unsandboxed.job("head -c 2000000 /dev/zero")  # the ring and the read buffers at their full size
    unsandboxed.exited(warm.job_id)
    before = executor.memory_info().rss
    report = unsandboxed.job("head -c 100000000 /dev/zero | tr '\\0' a")
    assert unsandboxed.exited(report.job_id).state == "exited"
    grown = executor.memory_info().rss - before
    assert grown < 3 * JOB_RING_BYTES + 8 * 1024 * 1024, grown
    read = unsandboxed.call(JobOutputArgs(id=report.job_id))
    assert isinstance(read.result, JobReport) and read.result.cursor == 100_000_000
    dropped = 100_000_000 - JOB_HEAD_BYTES - JOB_RING_BYTES
    assert f"{dropped} bytes of its output were dropped" in read.result.note


# ---------------------------------------------------------------- nothing outlives the session


@pytest.mark.parametrize("how", ["shutdown", "kill_jobs", "sigterm", "sigkill", "pipe_closed"])
def test_every_job_dies_with_the_session(root: Path, how: str) -> None:
    state = detect("workspace-write", False, [], os.environ)
    executor = Executor(root, state)
    token = secrets.token_hex(6)
    try:
        reports = [executor.job(sleeper(token)) for _ in range(2)]
        assert wait_for(lambda: len(marked(token)) >= 4, 10), marked(token)
        pids = marked(token)
        if how == "shutdown":
            executor.channel.send(Shutdown())
        elif how == "kill_jobs":
            executor.channel.send(KillJobs())
            assert {executor.exited(r.job_id).state for r in reports} == {"killed"}
        elif how == "sigterm":
            os.kill(executor.pid, signal.SIGTERM)
        elif how == "sigkill":
            os.kill(executor.pid, signal.SIGKILL)
        else:
            executor.channel.close()
        assert wait_for(lambda: not any(psutil.pid_exists(p) and _live(p) for p in pids), 10), marked(token)
    finally:
        executor.close()


def _live(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def test_job_output_goes_out_live_and_a_job_exit_is_said(unsandboxed: Executor) -> None:
    report = unsandboxed.job("echo first; sleep 0.1; echo second")
    exited = unsandboxed.exited(report.job_id)
    assert exited.state == "exited" and exited.exit_code == 0 and exited.last_line == "second"
    live = "".join(m.text for m in unsandboxed.events if isinstance(m, JobOutput) and m.job_id == report.job_id)
    assert live == "first\nsecond\n"
    assert not any(isinstance(m, CommandStarted | CommandOutput) for m in unsandboxed.events)


def test_esc_during_a_readiness_wait_stops_the_job_and_other_messages_wait_their_turn(unsandboxed: Executor) -> None:
    token = secrets.token_hex(6)
    start = ExecuteCommandArgs(command=sleeper(token), background=True, ready_pattern="never", ready_timeout=60)
    unsandboxed.channel.send(RunTool("start", start))
    assert isinstance(unsandboxed.next(), JobStarted)
    assert wait_for(lambda: len(marked(token)) >= 2, 10)
    pids = marked(token)
    unsandboxed.channel.send(RunTool("read", JobOutputArgs(id=1)))  # arrives during the wait: answered after it
    unsandboxed.channel.send(CancelTool("start"))
    finished: list[ToolFinished] = []
    while len(finished) < 2:
        message = unsandboxed.next()
        if isinstance(message, ToolFinished):
            finished.append(message)
    assert [f.call_id for f in finished] == ["start", "read"]
    cancelled = finished[0].result
    assert isinstance(cancelled, ToolCancelled) and cancelled.output is not None and token in cancelled.output.output
    read = finished[1].result
    assert isinstance(read, JobReport) and read.state == "killed"
    assert wait_for(lambda: not any(_live(p) for p in pids), 10)


def test_a_shutdown_during_a_readiness_wait_ends_the_job(root: Path) -> None:
    executor = Executor(root, SandboxState())
    token = secrets.token_hex(6)
    try:
        start = ExecuteCommandArgs(command=sleeper(token), background=True, ready_port=free_port(), ready_timeout=60)
        executor.channel.send(RunTool("start", start))
        assert isinstance(executor.next(), JobStarted)
        assert wait_for(lambda: len(marked(token)) >= 2, 10)
        pids = marked(token)
        executor.channel.send(Shutdown())
        executor.worker.process.join(REPLY_TIMEOUT_S)
        assert executor.worker.process.exitcode is not None
        assert wait_for(lambda: not any(_live(p) for p in pids), 10)
    finally:
        executor.close()


def test_the_standalone_executor_refuses_jobs_and_job_tools(tmp_path: Path) -> None:
    from dashfloat.executor._tools import run

    for args in (ExecuteCommandArgs(command="true", background=True), JobOutputArgs(id=1), JobKillArgs(id=1)):
        result = run(args, str(tmp_path))
        assert isinstance(result, ToolFailed) and "executor process" in result.error


def test_an_exposed_jobs_port_is_reachable_on_this_machine_until_the_job_ends(sandboxed: Executor) -> None:
    port = free_port()
    started = sandboxed.job(f"exec python3 -m http.server {port} --bind 127.0.0.1", ready_port=port)
    assert started.ready is True
    sandboxed.channel.send(ExposeJob(job_id=started.job_id))
    exposed = sandboxed.next()
    while not isinstance(exposed, JobExposed):
        exposed = sandboxed.next()
    assert exposed.ok, exposed.text
    host_port = int(exposed.text.rsplit("http://127.0.0.1:", 1)[1].split("/")[0])
    with urllib.request.urlopen(f"http://127.0.0.1:{host_port}/", timeout=10) as answer:
        assert answer.status == 200
    sandboxed.call(JobKillArgs(id=started.job_id))
    assert wait_for(lambda: not _accepts(host_port), 10)  # the relay ends with the job
    sandboxed.channel.send(ExposeJob(job_id=99))
    refused = sandboxed.next()
    while not isinstance(refused, JobExposed):
        refused = sandboxed.next()
    assert not refused.ok and "no job 99" in refused.text


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True
