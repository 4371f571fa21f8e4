"""The task suite against scripted models: every task passes with the oracle and fails with a model that does nothing.

Both runs are real: DashFloat started as ``dashfloat -p --json --approve all`` in a copy of each workspace, under
its default sandbox, against a real SSE server on 127.0.0.1, and graded by each task's own ``tests/test.sh``. A
grader that cannot fail shows up as a task the do-nothing model passes; a grader (or a solution) that cannot pass,
as a task the oracle fails.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from bench.eval import TASKS_DIR, AgentCommand, load_tasks, run_suite, scripted_model
from bench.eval.__main__ import _default_command

SUITE_MIN_TASKS = 15
SUITE_MAX_TASKS = 25
JOBS = 2
RUN_TIMEOUT_S = 60.0
"""Each scripted run's --timeout: the oracle needs about a second, a hung run must not stall CI."""


def _agent(base_url: str, kind: str) -> AgentCommand:
    return AgentCommand((_default_command(),), base_url, kind, RUN_TIMEOUT_S, isolate_config=True)


def test_every_task_passes_with_the_oracle() -> None:
    tasks = load_tasks()
    with scripted_model(tasks, "oracle") as server:
        results = run_suite(tasks, _agent(server.base_url, "oracle"), jobs=JOBS)
    failed = {r.task: r.note for r in results if not r.passed}
    assert not failed, f"the oracle's solution did not pass: {failed}"
    for task, result in zip(tasks, results, strict=True):
        assert result.stats.from_result and result.stats.outcome == "completed", result
        assert result.stats.episodes == len(task.calls) + 1, result  # one request per call, then the answer
        assert result.stats.prompt_tokens > 0


def test_every_task_fails_with_a_model_that_does_nothing() -> None:
    tasks = load_tasks()
    with scripted_model(tasks, "nothing") as server:
        results = run_suite(tasks, _agent(server.base_url, "nothing"), jobs=JOBS)
    passed = [r.task for r in results if r.passed]
    assert not passed, f"these graders pass an untouched workspace: {passed}"
    assert all(r.stats.outcome == "completed" and r.stats.episodes == 1 for r in results)


def test_the_suite_has_harbors_layout_and_every_kind_of_task() -> None:
    names = sorted(p.name for p in TASKS_DIR.iterdir() if (p / "task.toml").is_file())
    assert SUITE_MIN_TASKS <= len(names) <= SUITE_MAX_TASKS
    categories = set()
    for name in names:
        root = TASKS_DIR / name
        config = tomllib.loads((root / "task.toml").read_text())
        assert config["version"] == "1.0" and config["metadata"]["name"] == name
        assert config["verifier"]["timeout_sec"] > 0 and config["agent"]["timeout_sec"] > 0
        categories.add(config["metadata"]["category"])
        assert (root / "instruction.md").read_text().strip()
        test_sh = root / "tests" / "test.sh"
        assert os.access(test_sh, os.X_OK) and "reward.txt" in test_sh.read_text()
        dockerfile = (root / "environment" / "Dockerfile").read_text()
        assert "COPY workspace/ /app/" in dockerfile
        setup = root / "environment" / "setup.sh"
        assert setup.is_file() == ("RUN sh /tmp/setup.sh" in dockerfile), name
        assert any((root / "environment" / "workspace").iterdir())
        assert load_tasks(TASKS_DIR, name)[0].calls, f"{name}: solution/oracle.toml has no call"
    assert {"bugfix", "feature", "tests", "refactor", "logs", "cli", "config", "git"} <= categories


@pytest.mark.parametrize("pattern", ["git-*", "fix-mean-bug,cli-*"])
def test_a_pattern_picks_tasks_by_name(pattern: str) -> None:
    names = [t.name for t in load_tasks(TASKS_DIR, pattern)]
    assert names and all(any(Path(n).match(g) for g in pattern.split(",")) for n in names)
