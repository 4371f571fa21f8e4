"""Long sessions end to end: real processes against the scripted server with a small window that rejects
over-window prompts the way real servers do; the window is discovered from the server's own endpoint."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from dashfloat.agent import AgentOptions
from dashfloat.agent import _compaction as compaction
from dashfloat.protocol import (
    AgentReady,
    AgentToUi,
    ChatMessage,
    CompactConversation,
    ProviderConfig,
    SubmitPrompt,
    SystemEntry,
    ToolReply,
    TurnEnded,
)
from dashfloat.runtime import AgentProcess
from dashfloat.sessions.log import load
from dashfloat.testing.sse_server import Reply, ScriptedServer, count_tokens, text_reply, tool_calls_reply
from tests.e2e import assert_no_dangling, collect, outcome, turn_over

WINDOW = 8192
PROMPTS = 4
CALLS_PER_PROMPT = 49  # + the final answer: 50 requests, the episode limit of one turn
SUMMARY = "- The user asked to read big.txt many times.\n- Every read succeeded; nothing was changed."


@contextmanager
def agent(server: ScriptedServer, tree: Path, state: Path, **extra: Any) -> Iterator[AgentProcess]:
    provider = ProviderConfig(name="local", base_url=server.base_url, model="local")  # no context_window
    options = AgentOptions(provider=provider, cwd=str(tree), approval="all", state_dir=str(state), **extra)
    link = AgentProcess(options, log_path=str(tree.parent / "dashfloat.log"))
    try:
        yield link
    finally:
        link.shutdown()


class Model:
    """A deterministic scripted model: reads big.txt until told to stop, and summarises when asked."""

    def __init__(self) -> None:
        self.calls = 0
        self.summaries = 0
        self.per_prompt: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        usage = (count_tokens(body), 12)
        last = body["messages"][-1]
        if last["role"] == "user" and (last.get("content") or "").startswith(compaction.COMPACTION_PROMPT):
            with self.lock:
                self.summaries += 1
            return text_reply(SUMMARY, usage=usage)
        # The latest prompt stays verbatim through every compaction: count this prompt's calls by it.
        prompt = next(
            m["content"]
            for m in reversed(body["messages"])
            if m["role"] == "user" and not (m.get("content") or "").startswith(compaction.SUMMARY_HEADER)
        )
        with self.lock:
            if self.per_prompt.get(prompt, 0) >= CALLS_PER_PROMPT:
                return text_reply("I read it many times.", usage=usage)
            self.per_prompt[prompt] = self.per_prompt.get(prompt, 0) + 1
            self.calls += 1
            call_id = f"read_{self.calls}"
        # Two calls taking turns: the same call again right after its result would be cut as a loop (ADR 0079).
        args = {"path": "big.txt", "limit": 1000 + self.calls % 2}
        return tool_calls_reply([(call_id, "read_file", args)], usage=usage)


def big_file(tree: Path) -> None:
    lines = [
        f"line {n}: alpha beta gamma delta epsilon zeta eta theta iota kappa {n * 7919 % 1000}" for n in range(150)
    ]
    (tree / "big.txt").write_text("\n".join(lines) + "\n")


def entries(messages: list[AgentToUi]) -> list[str]:
    return [m.text for m in messages if isinstance(m, SystemEntry)]


def check_invariants(server: ScriptedServer) -> None:
    assert server.rejected == 0
    assert max(server.prompt_tokens) <= WINDOW
    for body in server.requests:
        assert_no_dangling(body["messages"])
        assert body["messages"][0]["role"] == "system"


def test_two_hundred_round_trips_in_a_small_window(tmp_path: Path) -> None:
    tree, state = tmp_path / "work", tmp_path / "state"
    tree.mkdir()
    big_file(tree)
    model = Model()
    with ScriptedServer() as server:
        server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": WINDOW}})
        server.window, server.window_error = WINDOW, "llamacpp"
        server.handler = model
        with agent(server, tree, state) as link:
            got: list[AgentToUi] = []
            for prompt in range(PROMPTS):
                link.send(SubmitPrompt(text=f"read big.txt again and again ({prompt})"))
                collect(link, turn_over, timeout_s=120, into=got)
                assert outcome(got) == "completed", entries(got)[-3:]
                if prompt == 1:
                    link.send(CompactConversation(focus="which files were read"))
                    collect(link, turn_over, timeout_s=60, into=got)
            ready = [m for m in got if isinstance(m, AgentReady)]
            assert (ready[-1].context_window, ready[-1].window_source) == (WINDOW, "server")
        check_invariants(server)
        assert model.calls == PROMPTS * CALLS_PER_PROMPT
        assert model.summaries >= 2  # automatic ones and the /compact
        assert any("which files were read" in json.dumps(b["messages"][-1]) for b in server.requests)
        notes = entries(got)
        assert any("compacted: shrank" in n for n in notes) and any("compacted: summarised" in n for n in notes)
        # the session log holds the compacted conversation and every message ever shown
        [path] = list((state / "sessions").glob("*.jsonl"))
        loaded = load(path)
        assert len(loaded.transcript) > len(loaded.messages)
        assert sum(isinstance(m, ToolReply) for m in loaded.transcript) == PROMPTS * CALLS_PER_PROMPT
        head = loaded.messages[0]
        assert isinstance(head, ChatMessage) and (head.content or "").startswith(compaction.SUMMARY_HEADER)
        # --continue resumes the compacted conversation, not the whole transcript
        sent_before = len(server.requests)
        server.enqueue(text_reply("resumed"))
        with agent(server, tree, state, continue_latest=True) as link:
            collect(link, turn_over, timeout_s=60)  # the replayed transcript ends idle
            link.send(SubmitPrompt(text="and now?"))
            got = collect(link, lambda m: isinstance(m, TurnEnded), timeout_s=60)
            assert outcome(got) == "completed"
        resumed = server.requests[sent_before]["messages"]
        assert (resumed[1]["content"] or "").startswith(compaction.SUMMARY_HEADER)
        assert resumed[-1] == {"role": "user", "content": "and now?"}
        check_invariants(server)


@pytest.mark.parametrize("shape", ["openai", "vllm", "llamacpp", "lmstudio"])
def test_an_over_window_rejection_compacts_and_retries_once(tmp_path: Path, shape: str) -> None:
    tree, state = tmp_path / "work", tmp_path / "state"
    tree.mkdir()
    big_file(tree)
    model = Model()
    with ScriptedServer() as server:
        # The server says 8192 but really takes 4096 (a model reloaded with a smaller context, a slot split).
        server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": 8192}})
        server.window, server.window_error = 4096, shape
        server.handler = model
        with agent(server, tree, state) as link:
            link.send(SubmitPrompt(text="read big.txt"))
            got = collect(link, turn_over, timeout_s=120)
        assert server.rejected >= 1
        notes = entries(got)
        assert any("exceeds the model's context window" in n and "retrying once" in n for n in notes), notes
        for body in server.requests:
            assert_no_dangling(body["messages"])
