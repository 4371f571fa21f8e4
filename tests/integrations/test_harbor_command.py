"""The Harbor adapter's logic without Docker or Harbor: the run command run for real by sh against the scripted
server, the install script run with stand-in tools, and the result record read from a recorded ``--json`` run."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dashfloat.testing.sse_server import ScriptedServer, error_reply, text_reply, tool_calls_reply
from integrations.harbor._command import (
    FINISHED_CODES,
    INSTALL_DIR,
    LOG_NAME,
    RESULT_MAX_BYTES,
    STDERR_NAME,
    AdapterError,
    RunRecord,
    RunSettings,
    RunUsage,
    dashfloat_argv,
    install_script,
    model_and_base_url,
    parse_result,
    run_command,
)
from tests.e2e import isolated_environment

FIXTURE = Path(__file__).parent / "fixtures" / "dashfloat-json-run.jsonl"
"""A real ``dashfloat -p - --json --yes --sandbox off --session-id harbor-task-1`` run (a write_file, then an
answer), recorded against the scripted server with usage (1200, 40) then (1300, 12)."""
RUN_WAIT_S = 60.0
VENV_BIN = str(Path(sys.executable).parent)


def test_the_recorded_run_reads_back_as_its_result_record() -> None:
    record = parse_result(FIXTURE.read_text())
    assert record == RunRecord(
        outcome="completed",
        exit_code=0,
        session_id="harbor-task-1",
        episodes=2,
        duration_s=record.duration_s if record else None,
        usage=RunUsage(prompt_tokens=1300, completion_tokens=12, cached_tokens=0, reasoning_tokens=0),
        changed_paths=("greet.py",),
    )
    assert record is not None and record.duration_s is not None and record.duration_s >= 0


def test_a_run_killed_before_its_result_reads_as_none() -> None:
    lines = FIXTURE.read_text().splitlines()
    assert parse_result("\n".join(lines[:-1])) is None
    assert parse_result("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2]) is None  # torn mid-line
    assert parse_result("") is None


def test_odd_values_in_a_result_become_none_or_zero_never_an_error() -> None:
    odd = {
        "type": "result",
        "outcome": 7,
        "exit_code": True,
        "session_id": None,
        "episodes": -1,
        "duration_s": "fast",
        "usage": {"prompt_tokens": "12", "completion_tokens": 3.5, "cached_tokens": False, "reasoning_tokens": 4},
        "changes": [{"path": "a"}, {"path": 3}, "b"],
    }
    text = "not json\n[1, 2]\n" + json.dumps(odd) + "\n{}\n"
    assert parse_result(text) == RunRecord(usage=RunUsage(reasoning_tokens=4), changed_paths=("a",))
    assert parse_result(json.dumps({"type": "result", "usage": [], "changes": {}})) == RunRecord()


def test_the_last_result_wins_and_an_oversized_line_is_not_read() -> None:
    first = json.dumps({"type": "result", "outcome": "failed", "exit_code": 1})
    second = json.dumps({"type": "result", "outcome": "completed", "exit_code": 0})
    record = parse_result(f"{first}\n{second}\n")
    assert record is not None and record.outcome == "completed"
    padded = json.dumps({"type": "result", "outcome": "completed", "pad": ""})
    fits = padded.replace('"pad": ""', '"pad": "' + "x" * (RESULT_MAX_BYTES - len(padded)) + '"')
    assert len(fits) == RESULT_MAX_BYTES and parse_result(fits) is not None
    assert parse_result(fits.replace('"pad": "', '"pad": "x')) is None


@pytest.mark.parametrize(
    ("model_name", "base_url", "expected"),
    [
        (None, None, (None, None)),
        ("gpt-4.1", None, ("gpt-4.1", None)),
        ("openai/gpt-4.1", None, ("gpt-4.1", "https://api.openai.com/v1")),
        ("openrouter/qwen/qwen3-coder", None, ("qwen/qwen3-coder", "https://openrouter.ai/api/v1")),
        ("hosted_vllm/qwen3", "http://vllm:8000/v1", ("qwen3", "http://vllm:8000/v1")),
        ("openai/gpt-4.1", "http://proxy/v1", ("gpt-4.1", "http://proxy/v1")),
    ],
)
def test_harbor_model_names_become_dashfloat_flags(
    model_name: str | None, base_url: str | None, expected: tuple[str | None, str | None]
) -> None:
    assert model_and_base_url(model_name, base_url) == expected


def test_a_provider_without_a_known_base_url_asks_for_one() -> None:
    with pytest.raises(AdapterError, match="pass --agent-kwarg base_url=URL or set OPENAI_BASE_URL"):
        model_and_base_url("hosted_vllm/qwen3", None)


def test_the_command_line_carries_every_setting() -> None:
    settings = RunSettings(
        model="m", base_url="http://h/v1", session_id="t-1", max_episodes=30, timeout_s=1800.0, extra_args=("-v",)
    )
    assert dashfloat_argv(settings) == [
        *("dashfloat", "-p", "-", "--json", "--yes", "--sandbox", "off"),
        *("--model", "m", "--base-url", "http://h/v1", "--session-id", "t-1"),
        *("--max-episodes", "30", "--timeout", "1800", "-v"),
    ]
    assert dashfloat_argv(RunSettings()) == ["dashfloat", "-p", "-", "--json", "--yes", "--sandbox", "off"]


def _run_in_shell(command: str, cwd: Path, tmp_path: Path, shell: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**isolated_environment(tmp_path), "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    return subprocess.run(
        [*shell, command], cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_WAIT_S, check=False
    )


# Harbor's own exec prefixes `set -o pipefail; ` and runs it in bash; a plain sh must work too.
@pytest.mark.parametrize("shell", [["sh", "-c"], ["bash", "-c"]], ids=["sh", "bash-pipefail"])
def test_the_run_command_runs_dashfloat_with_the_instruction_verbatim(
    tree: Path, tmp_path: Path, shell: list[str]
) -> None:
    instruction = "Fix the 'bug' in \"a.txt\":\n  $(rm -rf /) `whoami` $HOME \\n; exit 9\n"
    logs = tmp_path / "logs" / "agent"
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "read_file", {"path": "a.txt"})], usage=(100, 5)),
            text_reply("Fixed.", usage=(150, 7)),
        )
        settings = RunSettings(model="m", base_url=server.base_url, session_id="task-9", logs_dir=str(logs))
        command = run_command(instruction, settings)
        if shell[0] == "bash":
            command = "set -o pipefail; " + command
        done = _run_in_shell(command, tree, tmp_path, shell)
    assert done.returncode == 0, done.stderr
    assert server.requests[0]["messages"][-1]["content"] == instruction
    text = (logs / LOG_NAME).read_text()
    assert all(json.loads(line)["type"] for line in text.splitlines())  # JSON lines only: stderr went elsewhere
    record = parse_result(text)
    assert record is not None
    assert (record.outcome, record.exit_code, record.session_id) == ("completed", 0, "task-9")
    assert record.usage.completion_tokens == 5 + 7 and record.episodes == 2
    assert (logs / STDERR_NAME).exists()


def test_a_limit_is_a_finished_attempt_and_a_provider_failure_fails_the_step(tree: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("c1", "read_file", {"path": "a.txt"})]), text_reply("never asked"))
        limited = RunSettings(model="m", base_url=server.base_url, max_episodes=1, logs_dir=str(logs))
        stopped = _run_in_shell(run_command("read it", limited), tree, tmp_path, ["sh", "-c"])
        record = parse_result((logs / LOG_NAME).read_text())
        assert stopped.returncode == 0, stopped.stderr
        assert record is not None and record.exit_code == 3 and 3 in FINISHED_CODES
    with ScriptedServer() as server:
        server.enqueue(*[error_reply(401, "bad key")] * 3)
        failing = RunSettings(model="m", base_url=server.base_url, logs_dir=str(logs))
        failed = _run_in_shell(run_command("anything", failing), tree, tmp_path, ["sh", "-c"])
    assert failed.returncode == 1
    assert "bad key" in failed.stderr  # the stderr's tail is what Harbor's error shows
    record = parse_result((logs / LOG_NAME).read_text())
    assert record is not None and record.exit_code == 1


def test_a_usage_error_fails_the_step_with_its_message(tree: Path, tmp_path: Path) -> None:
    settings = RunSettings(model="m", base_url="http://127.0.0.1:9/v1", session_id="../x", logs_dir=str(tmp_path))
    done = _run_in_shell(run_command("x", settings), tree, tmp_path, ["sh", "-c"])
    assert done.returncode == 2 and "--session-id '../x' cannot name a session" in done.stderr


def _stand_in(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_the_install_script_installs_the_source_with_uv(tmp_path: Path) -> None:
    """Run for real with stand-ins for curl, git, uv and dashfloat on PATH (no network here): which tool is asked
    for what, and that a source with shell characters reaches uv as one word."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for tool in ("curl", "git"):
        _stand_in(bin_dir, tool, f'echo "{tool} $*" >> {calls}')
    _stand_in(bin_dir, "uv", f'echo "uv $UV_TOOL_DIR $*" >> {calls}')
    _stand_in(bin_dir, "dashfloat", 'echo "dashfloat 0.1.0"')
    source = "git+https://example.org/x/dashfloat.git@v1 ; touch /tmp/pwned"
    done = subprocess.run(
        ["sh", "-c", install_script(source)],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=RUN_WAIT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "dashfloat 0.1.0\n"
    (line,) = calls.read_text().splitlines()
    assert line == f"uv {INSTALL_DIR} tool install --force --python 3.12 {source}"
    assert shlex.split(install_script(source).splitlines()[-2])[-1] == source


def test_an_empty_source_is_refused() -> None:
    with pytest.raises(AdapterError, match="no DashFloat source"):
        install_script(" ")
