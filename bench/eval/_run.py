"""Run one task as a user would, then grade it outside DashFloat with the task's own verifier."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.eval._tasks import Task

KILL_GRACE_S: Final = 15.0
"""How long past its own ``--timeout`` a DashFloat run may take to end itself before it is terminated."""
TERM_GRACE_S: Final = 5.0
"""Between SIGTERM and SIGKILL when a run has to be stopped (SIGTERM lets DashFloat stop its own children)."""
SETUP_TIMEOUT_S: Final = 60.0
"""A task's ``environment/setup.sh`` (building a small git repository) must finish within this."""
DEFAULT_TIMEOUT_S_CAP: Final = 3600.0
"""The most ``--timeout`` may ask per task (a run of 25 tasks must still end within a day)."""
GIT_ISOLATION: Final = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
"""The setup and the grader ignore the machine's git configuration, so neither the start nor the verdict
depends on it (DashFloat's own run keeps the environment a user's run would have)."""


@dataclass(frozen=True)
class AgentCommand:
    """How DashFloat is started for every task: the command, the server and model, the time limit override."""

    command: tuple[str, ...]
    base_url: str | None = None
    model: str | None = None
    timeout_s: float | None = None
    """Overrides every task's ``[agent] timeout_sec`` when set."""
    isolate_config: bool = False
    """Start from an empty config directory (scripted models: a user's config.toml must not change the run)."""
    extra_args: tuple[str, ...] = ()

    def argv(self, task: Task, workspace: Path, limit_s: float) -> list[str]:
        """The whole command line for ``task`` run in ``workspace``."""
        argv = [*self.command, "-p", task.instruction, "--json", "--approve", "all", "--timeout", f"{limit_s:g}"]
        argv += ["--cwd", str(workspace)]
        if self.base_url:
            argv += ["--base-url", self.base_url]
        if self.model:
            argv += ["--model", self.model]
        return [*argv, *self.extra_args]


@dataclass(frozen=True)
class RunStats:
    """What a run's ``--json`` lines said: its outcome, model requests and tokens (0 where nothing said)."""

    outcome: str | None = None
    exit_code: int | None = None
    episodes: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    from_result: bool = False
    """Read from the final ``result`` record (else counted from the other events)."""


@dataclass(frozen=True)
class TaskResult:
    """One task's row: graded pass or fail, what the run said, its wall time and why it ended as it did."""

    task: str
    passed: bool
    stats: RunStats = field(default_factory=RunStats)
    seconds: float = 0.0
    note: str = ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def read_events(text: str) -> RunStats:
    """The run's stats from its ``--json`` stdout: the last ``result`` record when there is one, else counted from
    ``phase_changed`` to ``streaming`` (one per model request) and ``usage_shown`` events; bad lines are skipped."""
    streaming = 0
    # usage_shown comes per request ("request": true) and again at the turn's end (the last request's): a run's tokens
    # are the requests' sum, or the turns' where the stream predates per-request events
    sums = {True: [0, 0], False: [0, 0]}
    result: dict[str, Any] | None = None
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "phase_changed" and event.get("phase") == "streaming":
            streaming += 1
        elif kind == "usage_shown" and isinstance(event.get("usage"), dict):
            counted = sums[event.get("request") is True]
            counted[0] += _int(event["usage"].get("prompt_tokens"))
            counted[1] += _int(event["usage"].get("completion_tokens"))
        elif kind == "result":
            result = event
    if result is None:
        prompt, completion = sums[True] if any(sums[True]) else sums[False]
        return RunStats(episodes=streaming, prompt_tokens=prompt, completion_tokens=completion)
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    outcome = result.get("outcome")
    exit_code = result.get("exit_code")
    return RunStats(
        outcome=outcome if isinstance(outcome, str) else None,
        exit_code=exit_code if isinstance(exit_code, int) else None,
        episodes=_int(result.get("episodes")),
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        from_result=True,
    )


def _stop(process: subprocess.Popen[bytes], term_grace_s: float) -> None:
    """SIGTERM the run's process group, then SIGKILL it if it has not gone within ``term_grace_s``."""
    for sig, wait_s in ((signal.SIGTERM, term_grace_s), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass(frozen=True)
class Bounds:
    """The runner's own time bounds (tests cross each with a small value)."""

    kill_grace_s: float = KILL_GRACE_S
    term_grace_s: float = TERM_GRACE_S
    setup_timeout_s: float = SETUP_TIMEOUT_S


def _run_agent(
    task: Task, agent: AgentCommand, scratch: Path, workspace: Path, bounds: Bounds
) -> tuple[RunStats, float, str]:
    limit = min(agent.timeout_s or task.agent_timeout_s, DEFAULT_TIMEOUT_S_CAP)
    env = dict(os.environ, XDG_STATE_HOME=str(scratch / "state"))  # the runs' sessions stay out of the user's list
    if agent.isolate_config:
        env["XDG_CONFIG_HOME"] = str(scratch / "config")
    killed = False
    started = time.monotonic()
    with open(scratch / "events.jsonl", "wb") as out, open(scratch / "stderr.txt", "wb") as err:
        process = subprocess.Popen(
            agent.argv(task, workspace, limit),
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            process.wait(timeout=limit + bounds.kill_grace_s)
        except subprocess.TimeoutExpired:
            killed = True
            _stop(process, bounds.term_grace_s)
    seconds = time.monotonic() - started
    stats = read_events((scratch / "events.jsonl").read_text(errors="replace"))
    if killed:
        note = f"stopped by the runner {bounds.kill_grace_s:g} s after its {limit:g} s limit"
    elif stats.outcome is not None:
        note = stats.outcome
    else:
        note = f"no result record (exit {process.returncode})"
    return stats, seconds, note


def _run_bounded(argv: list[str], cwd: Path, env: dict[str, str], output: Path, timeout_s: float) -> int | None:
    """Run ``argv`` in its own process group, output to a file; its exit code, or None when ``timeout_s`` passed
    (then the whole group is killed: a grandchild must not keep running, or hold anything open)."""
    with open(output, "wb") as out:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            return process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(process, 0.0)
            return None


def _grade(task: Task, scratch: Path, workspace: Path) -> tuple[bool, str]:
    tests = scratch / "tests"
    verifier = scratch / "verifier"
    shutil.copytree(task.tests, tests)  # the verifier arrives after the agent is done, as Harbor uploads it
    verifier.mkdir()
    env = dict(os.environ, TESTS_DIR=str(tests), VERIFIER_DIR=str(verifier), PYTHON=sys.executable, **GIT_ISOLATION)
    code = _run_bounded(
        ["bash", str(tests / "test.sh")], workspace, env, verifier / "test-stdout.txt", task.verifier_timeout_s
    )
    if code is None:
        return False, f"verifier timed out after {task.verifier_timeout_s:g} s"
    try:
        reward = float((verifier / "reward.txt").read_text().strip())
    except (OSError, ValueError):
        return False, "verifier wrote no reward"
    return reward >= 1.0, ""


def _keep_logs(scratch: Path, logs: Path | None, name: str) -> None:
    if logs is None:
        return
    target = logs / name
    target.mkdir(parents=True, exist_ok=True)
    for source in ("events.jsonl", "stderr.txt", "verifier/test-stdout.txt"):
        if (scratch / source).is_file():
            shutil.copy(scratch / source, target / Path(source).name)


def run_task(
    task: Task, agent: AgentCommand, logs: Path | None = None, keep: bool = False, bounds: Bounds = Bounds()
) -> TaskResult:
    """Copy ``task``'s workspace to a scratch directory, run DashFloat there, grade it; ``logs``: keep the run's
    events, stderr and verifier output under ``logs/NAME/``; ``keep``: leave the scratch directory in place."""
    scratch = Path(tempfile.mkdtemp(prefix=f"dashfloat-eval-{task.name}-"))
    workspace = scratch / "app"
    try:
        shutil.copytree(task.workspace, workspace, symlinks=True)
        if task.setup is not None:
            env = dict(os.environ, **GIT_ISOLATION)
            code = _run_bounded(["sh", str(task.setup)], workspace, env, scratch / "setup.txt", bounds.setup_timeout_s)
            if code is None:
                return TaskResult(task.name, False, note=f"setup took over {bounds.setup_timeout_s:g} s")
            if code != 0:
                tail = (scratch / "setup.txt").read_text(errors="replace").strip()[-200:]
                return TaskResult(task.name, False, note=f"setup failed (exit {code}): {tail}")
        stats, seconds, note = _run_agent(task, agent, scratch, workspace, bounds)
        passed, why = _grade(task, scratch, workspace)
        _keep_logs(scratch, logs, task.name)
        return TaskResult(task.name, passed, stats, seconds, f"{note}; {why}" if why else note)
    finally:
        if not keep:
            shutil.rmtree(scratch, ignore_errors=True)


def run_suite(
    tasks: Sequence[Task], agent: AgentCommand, jobs: int = 1, logs: Path | None = None, keep: bool = False
) -> list[TaskResult]:
    """Every task, ``jobs`` at a time; the results in the tasks' order."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda task: run_task(task, agent, logs, keep), tasks))
