"""A headless run's usage is the sum of its requests', reported as each answer ends, and --budget-tokens bounds it.

Real `dashfloat -p --json` runs against the scripted server; every event is validated against the published schema.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dashfloat.cli import BUDGET_TOKENS_MAX
from dashfloat.protocol import Usage
from dashfloat.runtime._events import ResultUsage, add_usage
from dashfloat.runtime.printer import EXIT_LIMIT, EXIT_OK, EXIT_USAGE
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.runtime.test_headless_contract import HANGING, run_json, the_result

LOOK = [("c1", "list_directory", {"path": "."})]


def test_the_result_counts_every_request_and_each_is_reported_as_it_ends(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply(LOOK, usage=(10, 2)),
            tool_calls_reply([("c2", "list_directory", {"path": "."})], usage=(20, 3)),
            text_reply("Done.", usage=(40, 7)),
        )
        code, events, _ = run_json(server, tree, tmp_path, "-p", "look twice")
    assert code == EXIT_OK
    per_request = [e["usage"] for e in events if e["type"] == "usage_shown" and e.get("request")]
    assert [(u["prompt_tokens"], u["completion_tokens"]) for u in per_request] == [(10, 2), (20, 3), (40, 7)]
    # the turn's final usage_shown is still there, as before: the last request's
    final = [e["usage"] for e in events if e["type"] == "usage_shown" and not e.get("request")]
    assert [(u["prompt_tokens"], u["completion_tokens"]) for u in final] == [(40, 7)]
    result = the_result(events, EXIT_OK)
    assert result["usage"] == {"prompt_tokens": 70, "completion_tokens": 12, "cached_tokens": 0, "reasoning_tokens": 0}


def test_a_budget_crossed_mid_turn_cancels_it_and_exits_3(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        # 12 tokens, then 35 in all: past 25 while the turn still has requests to make
        server.enqueue(tool_calls_reply(LOOK, usage=(10, 2)), tool_calls_reply(LOOK, usage=(20, 3)), HANGING)
        code, events, stderr = run_json(server, tree, tmp_path, "-p", "look", "--budget-tokens", "25")
    result = the_result(events, EXIT_LIMIT)
    assert (result["outcome"], result["limit"]) == ("limit", "budget")
    assert result["usage"]["prompt_tokens"] + result["usage"]["completion_tokens"] == 35
    assert "stopped: --budget-tokens 25 crossed (35 tokens)" in stderr
    assert code == EXIT_LIMIT


def test_a_run_that_spends_exactly_its_budget_completes(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply(LOOK, usage=(10, 2)), text_reply("Done.", usage=(20, 3)))
        code, events, _ = run_json(server, tree, tmp_path, "-p", "look", "--budget-tokens", "35")
    result = the_result(events, EXIT_OK)
    assert (result["outcome"], result["limit"]) == ("completed", None)
    assert code == EXIT_OK


@pytest.mark.parametrize("value", ["0", str(BUDGET_TOKENS_MAX + 1), "many"])
def test_a_bad_budget_exits_2(tree: Path, tmp_path: Path, value: str) -> None:
    with ScriptedServer() as server:
        code, events, stderr = run_json(server, tree, tmp_path, "-p", "hi", "--budget-tokens", value)
    assert code == EXIT_USAGE and events == []
    assert "--budget-tokens:" in stderr


def test_the_largest_budget_is_accepted(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(text_reply("Hi.", usage=(1, 1)))
        code, _, _ = run_json(server, tree, tmp_path, "-p", "hi", "--budget-tokens", str(BUDGET_TOKENS_MAX))
    assert code == EXIT_OK


def test_cached_and_reasoning_tokens_are_summed_where_the_provider_gave_them() -> None:
    total = add_usage(ResultUsage(prompt_tokens=1, cached_tokens=2), Usage(prompt_tokens=10, completion_tokens=3))
    assert total == ResultUsage(prompt_tokens=11, completion_tokens=3, cached_tokens=2, reasoning_tokens=0)
    fields = {f for f in Usage.__struct_fields__}
    if {"cached_tokens", "reasoning_tokens"} <= fields:  # the protocol carries them (issue 34)
        given = Usage(prompt_tokens=10, completion_tokens=3, **{"cached_tokens": 4, "reasoning_tokens": 5})
        assert add_usage(total, given) == ResultUsage(
            prompt_tokens=21, completion_tokens=6, cached_tokens=6, reasoning_tokens=5
        )
