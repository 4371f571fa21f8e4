"""Headless as a unit of work: the --json event contract, the result record, the exit codes and the limits.

Every run here is the real `dashfloat -p` against the scripted server, and every event it writes is validated
against the published schema (docs/events.schema.json) as it is read.
"""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs installed: only the validator is used
import pytest

from dashfloat.agent import MAX_EPISODES_PER_TURN
from dashfloat.cli import MAX_EPISODES_MAX
from dashfloat.runtime._events import EVENT_SCHEMA_VERSION, event_schema, summary_lines
from dashfloat.runtime.printer import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_LIMIT,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
)
from dashfloat.testing.sse_server import (
    Pause,
    Reply,
    ScriptedServer,
    error_reply,
    sse_event,
    text_reply,
    tool_calls_reply,
)
from tests.e2e import dashfloat_argv, isolated_environment

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "events.schema.json"
PUBLISHED = json.loads(SCHEMA_PATH.read_text())
VALIDATOR = jsonschema.Draft202012Validator(PUBLISHED)

# A stream that starts and then says nothing for longer than any test waits: the run is cut while it streams.
HANGING = Reply(
    body=[sse_event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Thi"}}]}), Pause(60)]
)


def events_of(stdout: str) -> list[dict[str, Any]]:
    """The JSON lines of a run, each validated against the published schema."""
    events = [json.loads(line) for line in stdout.splitlines()]
    for event in events:
        VALIDATOR.validate(event)
    return events


def run_json(server: ScriptedServer, tree: Path, tmp_path: Path, *flags: str) -> tuple[int, list[dict[str, Any]], str]:
    result = subprocess.run(
        dashfloat_argv(server, tree, "--json", *flags),
        env=isolated_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, events_of(result.stdout), result.stderr


def the_result(events: list[dict[str, Any]], code: int) -> dict[str, Any]:
    """The last line, which is the result record and agrees with the exit code."""
    assert events[-1]["type"] == "result", events[-1]
    assert [e["type"] for e in events].count("result") == 1
    assert events[-1]["exit_code"] == code
    return events[-1]


def test_the_published_schema_is_the_one_the_code_writes() -> None:
    """A change of any event's shape fails here until docs/events.schema.json is written anew (and the version
    raised when the change is not additive): the stream can no longer change silently."""
    assert json.loads(json.dumps(event_schema())) == PUBLISHED, (
        "regenerate: python -c 'import json; from dashfloat.runtime._events import event_schema; "
        "print(json.dumps(event_schema(), indent=2, ensure_ascii=False))' > docs/events.schema.json"
    )
    assert PUBLISHED["x-schema-version"] == EVENT_SCHEMA_VERSION == 1


def test_a_completed_run_names_its_tools_leaks_no_prompt_history_and_ends_in_its_result(
    tree: Path, tmp_path: Path
) -> None:
    with ScriptedServer() as server:
        server.enqueue(text_reply("first.", usage=(5, 1)))
        code, _, _ = run_json(server, tree, tmp_path, "-p", "SECRET-EARLIER-PROMPT")
        assert code == EXIT_OK
        edit = {"path": "a.txt", "search_block": "hello", "replace_block": "bye\nthere"}
        server.enqueue(
            tool_calls_reply([("c1", "edit_file", edit), ("c2", "write_file", {"path": "new.txt", "content": "n\n"})]),
            tool_calls_reply([("c3", "list_directory", {"path": "."}), ("c4", "bogus_tool", {})]),
            text_reply("All done.", usage=(40, 7)),
        )
        code, events, _ = run_json(server, tree, tmp_path, "-p", "edit it", "--approve", "edits")
    assert code == EXIT_OK
    assert events[0]["type"] == "agent_ready" and events[0]["schema"] == EVENT_SCHEMA_VERSION
    assert "SECRET-EARLIER-PROMPT" not in json.dumps(events)
    assert not any("history" in event for event in events)
    named = {e["id"]: e["name"] for e in events if e["type"] in ("tool_call_shown", "tool_result_shown")}
    assert named == {"c1": "edit_file", "c2": "write_file", "c3": "list_directory", "c4": "bogus_tool"}
    result = the_result(events, EXIT_OK)
    started = [e["session_id"] for e in events if e["type"] == "session_started"]
    assert result["session_id"] == started[-1]
    assert result["outcome"] == "completed" and result["limit"] is None
    assert result["episodes"] == 3
    assert result["usage"] == {"prompt_tokens": 40, "completion_tokens": 7, "cached_tokens": 0, "reasoning_tokens": 0}
    digest = {text: hashlib.sha256(text.encode()).hexdigest() for text in ("hello\n", "bye\nthere\n", "n\n")}
    assert result["changes"] == [
        {
            "path": "a.txt",
            "added": 2,
            "removed": 1,
            "before_sha256": digest["hello\n"],
            "after_sha256": digest["bye\nthere\n"],
        },
        {"path": "new.txt", "added": 1, "removed": 0, "before_sha256": None, "after_sha256": digest["n\n"]},
    ]
    assert (tree / "a.txt").read_text() == "bye\nthere\n"


def test_a_provider_failure_exits_1(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(error_reply(401, "invalid api key"))
        code, events, _ = run_json(server, tree, tmp_path, "-p", "hi")
    assert code == EXIT_FAILED
    assert the_result(events, EXIT_FAILED)["outcome"] == "failed"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--max-episodes", "0"), "--max-episodes: needs 1 <= N"),
        (("--max-episodes", str(MAX_EPISODES_MAX + 1)), "--max-episodes: needs 1 <= N"),
        (("--max-episodes", "two"), "--max-episodes: not a whole number"),
        (("--timeout", "-1"), "--timeout: needs a positive number"),
        (("--timeout", "inf"), "--timeout: needs a positive number"),
        (("--timeout", "soon"), "--timeout: not a number"),
        (("--cwd", "/nonexistent/dir"), "not a directory"),
        (("--output-last-message", "/nonexistent/dir/answer.txt"), "in a directory that does not exist"),
        (("--output-last-message", "/tmp"), "a directory, or"),
    ],
)
def test_a_usage_or_config_error_exits_2_without_a_traceback(
    tree: Path, tmp_path: Path, flags: tuple[str, ...], said: str
) -> None:
    with ScriptedServer() as server:
        code, events, stderr = run_json(server, tree, tmp_path, "-p", "hi", *flags)
    assert code == EXIT_USAGE
    assert said in stderr
    assert events == []  # nothing ran: no event, and stderr says why


def test_limit_flags_need_a_headless_run(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        result = subprocess.run(
            [*dashfloat_argv(server, tree), "--timeout", "5", "--undo"],
            env=isolated_environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == EXIT_USAGE
    assert "--timeout needs -p PROMPT" in result.stderr


def test_max_episodes_cancels_the_request_past_it_and_exits_3(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "list_directory", {"path": "."})]),
            HANGING,
        )
        code, events, stderr = run_json(server, tree, tmp_path, "-p", "look", "--max-episodes", "1")
    result = the_result(events, EXIT_LIMIT)
    assert (result["outcome"], result["limit"], result["episodes"]) == ("limit", "episodes", 1)
    assert "stopped: --max-episodes 1 reached" in stderr
    assert code == EXIT_LIMIT


def test_timeout_cancels_the_run_and_exits_3(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(HANGING)
        code, events, stderr = run_json(server, tree, tmp_path, "-p", "hi", "--timeout", "0.5")
    result = the_result(events, EXIT_LIMIT)
    assert (result["outcome"], result["limit"]) == ("limit", "time")
    assert "stopped: --timeout 0.5 s reached" in stderr
    assert code == EXIT_LIMIT


def test_an_edit_refused_with_nobody_to_ask_exits_4(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "write_file", {"path": "b.txt", "content": "x"})]),
            text_reply("I could not write it."),
        )
        code, events, stderr = run_json(server, tree, tmp_path, "-p", "write b")
    result = the_result(events, EXIT_REFUSED)
    assert result["outcome"] == "refused" and result["changes"] == []
    confirm = [e for e in events if e["type"] == "confirm_requested"]
    assert confirm == [] or confirm[0]["name"] == "write_file"
    assert "rejected write_file" in stderr
    assert not (tree / "b.txt").exists()
    assert code == EXIT_REFUSED


@pytest.mark.parametrize(
    ("signum", "code", "outcome"),
    [(signal.SIGINT, EXIT_INTERRUPTED, "interrupted"), (signal.SIGTERM, 128 + signal.SIGTERM, "terminated")],
)
def test_an_interrupted_run_still_ends_in_its_result(
    tree: Path, tmp_path: Path, signum: int, code: int, outcome: str
) -> None:
    with ScriptedServer() as server:
        server.enqueue(HANGING)
        process = subprocess.Popen(
            dashfloat_argv(server, tree, "--json", "-p", "hi"),
            env=isolated_environment(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if '"text":"Thi"' in line:  # the stream is under way
                break
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    assert "Traceback" not in err, err
    events = events_of("".join(lines) + out)
    assert process.returncode == code
    assert the_result(events, code)["outcome"] == outcome


def test_output_last_message_holds_the_final_answer_only(tree: Path, tmp_path: Path) -> None:
    answer = tmp_path / "answer.txt"
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "list_directory", {"path": "."})], content="Let me look."),
            text_reply("The tree holds a.txt.\n"),
        )
        result = subprocess.run(
            dashfloat_argv(server, tree, "-p", "look", "--output-last-message", str(answer)),
            env=isolated_environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == EXIT_OK, result.stderr
    assert answer.read_text() == "The tree holds a.txt.\n"


@pytest.mark.parametrize(
    ("summary", "lines"),
    [("+3 −1 · 40 bytes", (3, 1)), ("new file · +2 · 9 bytes", (2, 0)), ("npm test", (0, 0))],
)
def test_summary_lines(summary: str, lines: tuple[int, int]) -> None:
    assert summary_lines(summary) == lines


def test_the_agents_own_per_turn_cap_is_a_limit_too(tree: Path, tmp_path: Path) -> None:
    """A model that never stops calling tools meets the agent's MAX_EPISODES_PER_TURN: exit 3, limit "turn"."""
    with ScriptedServer() as server:
        count = iter(range(MAX_EPISODES_PER_TURN + 5))
        server.handler = lambda body: tool_calls_reply(
            [(f"c{n}", "list_directory", {"path": f"d{n}"}) for n in [next(count)]]
        )
        code, events, _ = run_json(server, tree, tmp_path, "-p", "loop")
    result = the_result(events, EXIT_LIMIT)
    assert (result["outcome"], result["limit"], result["episodes"]) == ("limit", "turn", MAX_EPISODES_PER_TURN)
    assert code == EXIT_LIMIT


def test_every_model_request_counts_as_an_episode_even_when_no_call_ran_between(tree: Path, tmp_path: Path) -> None:
    # An unknown tool's call fails without running anything, so the phase never left streaming: the result counted 1.
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "no_such_tool", {"x": 1})]),
            tool_calls_reply([("c2", "no_such_tool", {"x": 2})]),
            text_reply("done"),
        )
        code, events, _ = run_json(server, tree, tmp_path, "-p", "go", "--yes")
    assert code == 0
    result = the_result(events, 0)
    assert result["episodes"] == 3
    assert [e["phase"] for e in events if e["type"] == "phase_changed"].count("streaming") == 3
