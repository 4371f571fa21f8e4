"""The runner's own parts: reading the --json events, its time bounds, the results file, the command line."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from bench.eval import (
    DEFAULT_TIMEOUT_S_CAP,
    AgentCommand,
    Bounds,
    RunStats,
    Task,
    TaskError,
    TaskResult,
    load_task,
    read_events,
    results_section,
    run_task,
    update_results,
)
from bench.eval.__main__ import main
from bench.eval._oracle import oracle_reply
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, text_reply

FIXTURE = Path(__file__).parent.parent / "integrations" / "fixtures" / "dashfloat-json-run.jsonl"
SLEEPER = (sys.executable, "-c", "import time; time.sleep(60)")
"""A stand-in DashFloat that ignores --timeout (its arguments land in sys.argv)."""
STUBBORN = (
    sys.executable,
    "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
)
"""One that ignores SIGTERM as well."""


def make_task(
    root: Path,
    test_sh: str = 'echo 1 > "$VERIFIER_DIR/reward.txt"\n',
    setup: str | None = None,
    toml: str = "[agent]\ntimeout_sec = 30\n\n[verifier]\ntimeout_sec = 20\n",
    oracle: str = 'final = "ok"\n\n[[call]]\ntool = "write_file"\npath = "a.txt"\ncontent = "x"\n',
) -> Task:
    """A task directory in the suite's layout, with the given verifier, setup, config and solution."""
    (root / "environment" / "workspace").mkdir(parents=True)
    (root / "environment" / "workspace" / "README.md").write_text("# t\n")
    (root / "tests").mkdir()
    (root / "tests" / "test.sh").write_text("#!/bin/bash\n" + test_sh)
    (root / "solution").mkdir()
    (root / "solution" / "oracle.toml").write_text(oracle)
    (root / "task.toml").write_text('version = "1.0"\n\n' + toml)
    (root / "instruction.md").write_text(f"Do the {root.name} task.\n")
    if setup is not None:
        (root / "environment" / "setup.sh").write_text(setup)
    return load_task(root)


def idle_agent(server: ScriptedServer, timeout_s: float | None = None) -> AgentCommand:
    from bench.eval.__main__ import _default_command

    return AgentCommand((_default_command(),), server.base_url, "m", timeout_s, isolate_config=True)


# ---------------------------------------------------------------- events


def test_the_result_record_gives_episodes_tokens_and_outcome() -> None:
    stats = read_events(FIXTURE.read_text())
    assert stats == RunStats("completed", 0, 2, 1300, 12, from_result=True)


def test_without_a_result_record_requests_and_usage_are_counted() -> None:
    lines = [
        '{"type":"phase_changed","phase":"streaming"}',
        "not json at all",
        '{"type":"usage_shown","usage":{"prompt_tokens":100,"completion_tokens":7}}',
        '{"type":"phase_changed","phase":"running"}',
        '{"type":"phase_changed","phase":"streaming"}',
        '{"type":"usage_shown","usage":{"prompt_tokens":150,"completion_tokens":true}}',
        "[1, 2]",
        '{"type":"result","outcome"',
    ]
    assert read_events("\n".join(lines)) == RunStats(None, None, 2, 250, 7, from_result=False)


def test_a_malformed_result_record_reads_as_zeros() -> None:
    stats = read_events('{"type":"result","outcome":3,"episodes":-1,"usage":[1]}')
    assert stats == RunStats(None, None, 0, 0, 0, from_result=True)


# ---------------------------------------------------------------- time bounds and failures


def test_the_agent_time_limit_ends_a_run_as_a_limit(tmp_path: Path) -> None:
    task = make_task(tmp_path / "slow", toml="[agent]\ntimeout_sec = 1\n")
    with ScriptedServer() as server:
        server.handler = lambda body: Reply(body=[Pause(30)])
        result = run_task(task, idle_agent(server))
    assert result.stats.outcome == "limit" and result.note == "limit"
    assert result.passed  # the verifier here always rewards: the verdict is the grader's alone


def test_a_run_that_outlives_its_limit_and_the_grace_is_stopped(tmp_path: Path) -> None:
    task = make_task(tmp_path / "hung")
    agent = AgentCommand(SLEEPER, timeout_s=0.5)
    result = run_task(task, agent, bounds=Bounds(kill_grace_s=0.2))
    assert result.note.startswith("stopped by the runner 0.2 s after its 0.5 s limit")
    assert result.stats == RunStats()


def test_a_run_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    task = make_task(tmp_path / "stubborn")
    agent = AgentCommand(STUBBORN, timeout_s=0.5)
    result = run_task(task, agent, bounds=Bounds(kill_grace_s=0.2, term_grace_s=0.2))
    assert result.note.startswith("stopped by the runner")


def test_a_verifier_past_its_limit_fails_the_task(tmp_path: Path) -> None:
    task = make_task(tmp_path / "v", test_sh="exec sleep 30\n", toml="[verifier]\ntimeout_sec = 0.5\n")
    with ScriptedServer() as server:
        server.handler = lambda body: text_reply("ok")
        result = run_task(task, idle_agent(server, 30))
    assert not result.passed and result.note == "completed; verifier timed out after 0.5 s"


def test_a_verifier_that_writes_no_reward_fails_the_task(tmp_path: Path) -> None:
    task = make_task(tmp_path / "v", test_sh="exit 0\n")
    with ScriptedServer() as server:
        server.handler = lambda body: text_reply("ok")
        result = run_task(task, idle_agent(server, 30))
    assert not result.passed and result.note.endswith("verifier wrote no reward")


def test_a_failing_setup_is_reported_and_nothing_runs(tmp_path: Path) -> None:
    task = make_task(tmp_path / "s", setup="echo broken repository >&2\nexit 3\n")
    result = run_task(task, AgentCommand(SLEEPER))
    assert not result.passed and result.note == "setup failed (exit 3): broken repository"


def test_a_setup_past_its_limit_is_stopped(tmp_path: Path) -> None:
    task = make_task(tmp_path / "s", setup="exec sleep 30\n")
    result = run_task(task, AgentCommand(SLEEPER), bounds=Bounds(setup_timeout_s=0.3))
    assert result.note == "setup took over 0.3 s"


def test_logs_keep_the_events_and_the_verifier_output(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", test_sh='echo graded; echo 1 > "$VERIFIER_DIR/reward.txt"\n')
    with ScriptedServer() as server:
        server.handler = lambda body: text_reply("ok")
        result = run_task(task, idle_agent(server, 30), logs=tmp_path / "logs")
    assert result.passed
    assert '"type":"result"' in (tmp_path / "logs" / "t" / "events.jsonl").read_text()
    assert (tmp_path / "logs" / "t" / "test-stdout.txt").read_text() == "graded\n"


# ---------------------------------------------------------------- tasks


@pytest.mark.parametrize(
    ("toml", "oracle", "message"),
    [
        ("[agent]\ntimeout_sec = 0\n", "", "[agent] timeout_sec must be a positive number"),
        ('[verifier]\ntimeout_sec = "60"\n', "", "[verifier] timeout_sec must be a positive number"),
        ("", '[[call]]\ntool = "create_file"\n', "names tool 'create_file'"),
        ("[agent\n", "", "task.toml: "),
        ("", "[[call]\n", "oracle.toml: "),
    ],
)
def test_a_malformed_task_is_refused_by_name(tmp_path: Path, toml: str, oracle: str, message: str) -> None:
    with pytest.raises(TaskError, match=re.escape(message)):
        make_task(tmp_path / "bad", toml=toml, oracle=oracle)


def test_a_task_without_its_verifier_is_refused(tmp_path: Path) -> None:
    make_task(tmp_path / "t")
    (tmp_path / "t" / "tests" / "test.sh").unlink()
    with pytest.raises(TaskError, match=re.escape("tests/test.sh is missing")):
        load_task(tmp_path / "t")


def test_the_oracle_refuses_a_conversation_it_has_no_task_for(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    reply = oracle_reply({task.instruction: task}, {"messages": [{"role": "user", "content": "something else"}]})
    assert reply.status == 400


# ---------------------------------------------------------------- results file


def _results(*verdicts: bool) -> list[TaskResult]:
    return [
        TaskResult(f"t{n}", v, RunStats("completed", 0, 2, 100, 5), 1.25, "completed") for n, v in enumerate(verdicts)
    ]


def test_a_section_holds_the_score_and_one_row_per_task() -> None:
    section = results_section("model x", ["fact one"], _results(True, False))
    assert section.splitlines()[:4] == ["## model x", "", "- fact one", "- **1 of 2 tasks passed**"]
    assert "| t0 | PASS | 2 | 105 | 1.2 | completed |" in section
    assert "| t1 | fail | 2 | 105 | 1.2 | completed |" in section


def test_a_new_run_replaces_its_own_section_and_keeps_the_others() -> None:
    first = update_results("", results_section("a", [], _results(True)))
    assert first.startswith("# Task suite results")
    both = update_results(first, results_section("b", [], _results(False)))
    again = update_results(both, results_section("a", ["rerun"], _results(False)))
    assert again.count("## a\n") == 1 and again.count("## b\n") == 1
    assert "- rerun" in again and again.index("## a") < again.index("## b")


# ---------------------------------------------------------------- command line


def test_make_eval_writes_the_table_and_checks_the_verdicts(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    assert main(["--tasks", "config-*", "--jobs", "2", "--timeout", "60", "--out", str(out)]) == 0
    assert main(["--tasks", "config-*", "--do-nothing", "--timeout", "60", "--out", str(out)]) == 0
    text = out.read_text()
    assert "## scripted oracle" in text and "**3 of 3 tasks passed**" in text
    assert "## scripted do-nothing model" in text and "**0 of 3 tasks passed**" in text


def test_a_task_the_oracle_cannot_solve_fails_make_eval(tmp_path: Path) -> None:
    make_task(tmp_path / "tasks" / "unsolvable", test_sh='echo 0 > "$VERIFIER_DIR/reward.txt"\n')
    argv = ["--tasks-dir", str(tmp_path / "tasks"), "--no-write", "--timeout", "60"]
    assert main(argv) == 1
    assert main([*argv, "--do-nothing"]) == 0


def test_no_matching_task_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--tasks", "no-such-task", "--no-write"]) == 2
    assert "no task in" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["--timeout", str(DEFAULT_TIMEOUT_S_CAP + 1)],
        ["--timeout", "0"],
        ["--jobs", "0"],
        ["--jobs", "x"],
        ["--do-nothing", "--base-url", "http://127.0.0.1:1/v1"],
    ],
)
def test_bad_options_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--no-write"])
    assert exit_info.value.code == 2


def test_without_a_result_record_per_request_usage_is_summed_and_the_turns_repeat_is_not() -> None:
    lines = [
        '{"type":"phase_changed","phase":"streaming"}',
        '{"type":"usage_shown","usage":{"prompt_tokens":100,"completion_tokens":7},"request":true}',
        '{"type":"phase_changed","phase":"streaming"}',
        '{"type":"usage_shown","usage":{"prompt_tokens":150,"completion_tokens":3},"request":true}',
        '{"type":"usage_shown","usage":{"prompt_tokens":150,"completion_tokens":3}}',
    ]
    assert read_events("\n".join(lines)) == RunStats(None, None, 2, 250, 10, from_result=False)
