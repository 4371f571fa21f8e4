"""/usage shows cached and reasoning tokens when the provider reports them (ADR 0077), through the real agent, LLM
process and HTTP server; the table keeps its three columns when no provider reports them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dashfloat.agent._reports import usage_report
from dashfloat.protocol import SandboxState, ShowUsage, SubmitPrompt, SystemEntry, Usage
from dashfloat.testing.sse_server import Reply, ScriptedServer, sse_event
from tests.e2e import agent_tree, collect, turn_over


def answer(text: str, usage: dict[str, Any]) -> Reply:
    delta = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]}
    return Reply(body=[sse_event(delta), sse_event({"choices": [], "usage": usage}), sse_event("[DONE]")])


def test_usage_shows_cached_and_reasoning_tokens(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        server.enqueue(
            answer("one", {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}),
            answer(
                "two",
                {
                    "prompt_tokens": 80,
                    "completion_tokens": 30,
                    "total_tokens": 110,
                    "prompt_tokens_details": {"cached_tokens": 48},
                    "completion_tokens_details": {"reasoning_tokens": 21},
                },
            ),
        )
        for prompt in ("first", "second"):
            link.send(SubmitPrompt(text=prompt))
            collect(link, turn_over)
        link.send(ShowUsage())
        report = collect(link, lambda m: isinstance(m, SystemEntry) and "turn  prompt" in m.text)[-1]
        assert isinstance(report, SystemEntry)
        rows = report.text.splitlines()
        header = next(i for i, row in enumerate(rows) if row.startswith("turn  prompt"))
        assert rows[header].split() == ["turn", "prompt", "completion", "total", "cached", "reasoning"]
        assert rows[header + 1].split() == ["1", "50", "9", "59", "-", "-"]
        assert rows[header + 2].split() == ["2", "80", "30", "110", "48", "21"]


def test_without_details_the_table_is_as_before() -> None:
    report = usage_report("window", SandboxState(), [Usage(5, 1, 6)])
    assert "turn  prompt  completion  total\n1" in report and "cached" not in report
