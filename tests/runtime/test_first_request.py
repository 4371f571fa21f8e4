"""The first request goes before the window is known, and its answer waits for it (ADR 0052): the real CLI headless
against a scripted server whose window probes wait until the test lets them answer."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from dashfloat.testing.sse_server import BodyItem, Reply, ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, wait_for

GATE_S = 30.0
"""How long a gated answer waits at most (a broken test fails instead of hanging)."""


def _after(gate: threading.Event, body: Iterable[BodyItem]) -> Iterator[BodyItem]:
    assert gate.wait(GATE_S)
    yield from body


def _gate_models(server: ScriptedServer) -> threading.Event:
    """The discovery's first probe (``GET /v1/models``) is answered (``{}``: no window there) once the gate opens."""
    gate = threading.Event()
    body = _after(gate, [b"{}"])
    server.routes[("GET", "/v1/models")] = Reply(headers={"Content-Type": "application/json"}, body=body)
    return gate


def _start(server: ScriptedServer, tree: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        dashfloat_argv(server, tree, *args),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_first_request_goes_while_the_window_is_asked_and_its_tool_runs_once_it_is_known(
    tree: Path, isolated_env: dict[str, str]
) -> None:
    with ScriptedServer() as server:
        gate = _gate_models(server)
        server.enqueue(tool_calls_reply([("c1", "read_file", {"path": "a.txt"})]), text_reply("read it"))
        process = _start(server, tree, isolated_env, "--json", "-p", "read a.txt")
        try:
            assert server.wait_requests(1, GATE_S)  # the chat request, while the first probe is unanswered
            # The probe's GET and the chat's POST go out side by side: either may reach the server first.
            assert wait_for(lambda: server.gets == ["/v1/models"], GATE_S) and len(server.requests) == 1
        finally:
            gate.set()
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["type"] for e in events]
    assumed = next(i for i, e in enumerate(events) if "assuming 32.8k tokens" in e.get("text", ""))
    assert assumed < kinds.index("tool_call_shown") < kinds.index("tool_result_shown")
    assert len(server.requests) == 2 and "read it" in out
    tool = [m for m in server.requests[1]["messages"] if m.get("role") == "tool"]
    assert len(tool) == 1 and "hello" in tool[0]["content"]


def test_a_first_request_the_window_then_refuses_is_cancelled_and_nothing_of_its_answer_shows(
    tree: Path, isolated_env: dict[str, str]
) -> None:
    with ScriptedServer() as server:
        gate = _gate_models(server)
        server.props = {"n_ctx": 600}  # a window below the system message and the tools alone
        server.enqueue(text_reply("an answer to a prompt the server cut"))
        process = _start(server, tree, isolated_env, "-p", "hello")
        try:
            assert server.wait_requests(1, GATE_S)
        finally:
            gate.set()  # after the stream has ended, or while it runs: either way it is held
        out, err = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "an answer to a prompt the server cut" not in out + err
    assert "does not fit the model's context window (600)" in err
    assert len(server.requests) == 1  # not retried


def test_a_long_first_prompt_still_waits_for_the_window_and_is_refused_before_it_is_sent(
    tree: Path, isolated_env: dict[str, str]
) -> None:
    (tree / "big.txt").write_text("word " * 4000)  # ~20 KB attached: above EARLY_REQUEST_MAX_TOKENS
    with ScriptedServer() as server:
        server.props = {"n_ctx": 4096}
        process = _start(server, tree, isolated_env, "-p", "summarise @big.txt")
        _, err = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "does not fit the model's context window (4.1k)" in err
    assert server.requests == []


def test_an_answer_held_for_a_slow_window_is_not_taken_for_a_silent_stream(
    tree: Path, isolated_env: dict[str, str]
) -> None:
    # Found by review: the whole answer had come and was held for the window, but the agent's watchdog counted the
    # LLM process's silence meanwhile against the idle timeout (plus its slack) and killed it: with a short idle
    # timeout and a discovery that took until its deadline, 'the model stream process died' and no answer.
    env = {**isolated_env, "DASHFLOAT_IDLE_TIMEOUT_S": "0.5"}
    with ScriptedServer() as server:
        gate = threading.Event()  # never opened while the run lasts: every probe times out, the discovery ends late
        json_type = {"Content-Type": "application/json"}
        for route in [("GET", "/v1/models"), ("GET", "/props"), ("GET", "/api/v0/models"), ("GET", "/api/ps")]:
            server.routes[route] = Reply(headers=json_type, body=_after(gate, [b"{}"]))
        server.routes[("POST", "/api/show")] = Reply(headers=json_type, body=_after(gate, []))
        server.enqueue(text_reply("the held answer"))
        process = _start(server, tree, env, "-p", "hello")
        try:
            out, err = process.communicate(timeout=60)
        finally:
            gate.set()
    assert process.returncode == 0, err
    assert "the held answer" in out and "died" not in err
