"""The window discovery while the HTTP stack is still being imported (ADR 0045): which servers are asked through
http.client, what that route does with redirects, closed connections and large answers, and that a discovery
answers during the import only when it may."""

from __future__ import annotations

import json
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat._startup.preload import Preload
from dashfloat.jsonvalue import JsonValue
from dashfloat.llm import _window as w
from dashfloat.llm._discover import PROBE_BODY_MAX_BYTES, Discovery, PlainProber, discover
from dashfloat.llm._route import plain_probes
from dashfloat.protocol import DiscoverWindow, ProviderConfig, WindowFound
from dashfloat.testing.sse_server import Reply, ScriptedServer, redirect_reply
from tests.llm import window_responses as r

LOCAL = "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize(
    ("url", "env", "expected"),
    [
        (LOCAL, {}, True),
        ("http://localhost:11434/v1", {}, True),
        ("http://192.168.1.5:1234/v1", {}, True),
        ("https://127.0.0.1:8080/v1", {}, False),  # TLS: asked through requests (its CA settings, its pool)
        ("http://api.example.com/v1", {}, False),  # not local
        ("https://api.openai.com/v1", {}, False),
        (LOCAL, {"http_proxy": "http://proxy:3128"}, False),  # requests would route through it
        (LOCAL, {"HTTP_PROXY": "http://proxy:3128"}, False),
        (LOCAL, {"ALL_PROXY": "socks5://proxy:1080"}, False),
        (LOCAL, {"all_proxy": "socks5://proxy:1080"}, False),
        (LOCAL, {"https_proxy": "http://proxy:3128"}, True),  # not for plain HTTP
        (LOCAL, {"NETRC": "/somewhere/netrc"}, False),  # requests would send its credentials
    ],
)
def test_which_servers_are_asked_through_http_client(
    url: str, env: dict[str, str], expected: bool, tmp_path: Path
) -> None:
    assert plain_probes(url, env, home=tmp_path) is expected


@pytest.mark.parametrize("name", [".netrc", "_netrc"])
def test_a_netrc_file_in_the_home_directory_sends_the_discovery_through_requests(name: str, tmp_path: Path) -> None:
    assert plain_probes(LOCAL, {}, home=tmp_path)
    (tmp_path / name).write_text("machine 127.0.0.1 login me password secret\n")
    assert not plain_probes(LOCAL, {}, home=tmp_path)


def _plain(server: ScriptedServer, model: str = "m") -> WindowFound:
    prober = PlainProber(w.DISCOVERY_TIMEOUT_S)
    try:
        return discover(ProviderConfig(name="t", base_url=server.base_url, model=model), get=prober.get)
    finally:
        prober.close()


def test_a_redirect_within_the_server_is_followed_one_elsewhere_is_not() -> None:
    with ScriptedServer() as server, ScriptedServer() as elsewhere:
        server.routes[("GET", "/v1/models")] = redirect_reply("/v1/models/all")
        server.routes[("GET", "/v1/models/all")] = (200, r.VLLM_MODELS)
        found = _plain(server, "Qwen/Qwen2.5-Coder-7B-Instruct")
        assert (found.window, found.detail) == (32768, "/models")
        server.routes[("GET", "/v1/models")] = redirect_reply(f"{elsewhere.base_url}/models")
        elsewhere.routes[("GET", "/v1/models")] = (200, r.VLLM_MODELS)
        found = _plain(server, "Qwen/Qwen2.5-Coder-7B-Instruct")
        assert found.source == "assumed" and elsewhere.other_requests == []


def test_an_answer_that_closes_its_connection_does_not_stop_the_next_probe() -> None:
    with ScriptedServer() as server:
        closing = Reply(200, {"Content-Type": "application/json"}, [json.dumps(r.LMSTUDIO_OPENAI_MODELS).encode()])
        server.routes[("GET", "/v1/models")] = Reply(closing.status, closing.headers, closing.body, chunked=False)
        server.routes[("GET", "/api/v0/models")] = (200, r.LMSTUDIO_V0_MODELS)
        found = _plain(server, "qwen2.5-coder-7b-instruct")
        assert (found.window, found.detail) == (4096, "LM Studio /api/v0/models")
        assert server.connections >= 2  # the first answer ended with its connection; the next probes made another


def _padded_models(size: int) -> dict[str, JsonValue]:
    """A /v1/models answer saying 8192 for "m", padded to exactly ``size`` bytes as the server encodes it."""
    body: dict[str, JsonValue] = {"data": [{"id": "m", "max_model_len": 8192}], "pad": ""}
    body["pad"] = "x" * (size - len(json.dumps(body)))
    assert len(json.dumps(body)) == size
    return body


def test_an_answer_over_the_probe_cap_is_not_read() -> None:
    """PROBE_BODY_MAX_BYTES crossed: an answer of exactly the cap is decoded, one byte more is not."""
    with ScriptedServer() as server:
        server.routes[("GET", "/v1/models")] = (200, _padded_models(PROBE_BODY_MAX_BYTES))
        assert _plain(server).window == 8192
        server.routes[("GET", "/v1/models")] = (200, _padded_models(PROBE_BODY_MAX_BYTES + 1))
        assert _plain(server).source == "assumed"


def test_nothing_listening_is_answered_as_assumed() -> None:
    prober = PlainProber(w.DISCOVERY_TIMEOUT_S)
    found = discover(ProviderConfig(name="t", base_url="http://127.0.0.1:9/v1", model="m"), get=prober.get)
    assert (found.window, found.source) == (w.DEFAULT_ASSUMED_WINDOW, "assumed")


@pytest.fixture
def held_import(tmp_path: Path) -> Iterator[tuple[Preload, Path]]:
    """A Preload whose module's import blocks until the test writes to a FIFO: the HTTP stack still importing."""
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    name = f"held_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(f"with open({str(fifo)!r}) as gate:\n    gate.read()\n")
    sys.path.insert(0, str(tmp_path))
    preload = Preload((name,))
    try:
        yield preload, fifo
    finally:
        if fifo not in _released:  # not preload.done(): the import may not have noticed a release yet, and a
            _release(fifo)  # second open for writing would wait for a reader forever
        _released.discard(fifo)
        preload.wait()
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


_released: set[Path] = set()
"""The FIFOs a test opened its held import with."""


def _release(fifo: Path) -> None:
    _released.add(fifo)
    with open(fifo, "w") as gate:
        gate.write("go")


def _discover_with(server: ScriptedServer, preload: Preload) -> tuple[threading.Event, list[tuple[WindowFound, bool]]]:
    replied = threading.Event()
    answers: list[tuple[WindowFound, bool]] = []

    def done(_ask: DiscoverWindow, found: WindowFound) -> None:
        answers.append((found, preload.done()))
        replied.set()

    provider = ProviderConfig(name="t", base_url=server.base_url, model="local")
    Discovery(DiscoverWindow(request_id=7, provider=provider), done, {}, preload).begin()
    return replied, answers


def test_a_local_server_is_asked_while_the_stack_still_imports(
    held_import: tuple[Preload, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "NETRC"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no netrc there
    preload, fifo = held_import
    with ScriptedServer() as server:
        server.routes[("GET", "/v1/models")] = (200, r.LLAMACPP_MODELS)
        server.props = r.LLAMACPP_PROPS
        replied, answers = _discover_with(server, preload)
        assert replied.wait(30)
        [(found, stack_done)] = answers
        assert (found.request_id, found.window, found.detail) == (7, 8192, "llama.cpp /props n_ctx")
        assert not stack_done  # answered during the import
    _release(fifo)


def test_a_discovery_that_needs_requests_waits_for_the_stack(
    held_import: tuple[Preload, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    preload, fifo = held_import
    monkeypatch.setenv("NETRC", str(tmp_path / "no-such-netrc"))  # requests would look there: it asks
    with ScriptedServer() as server:
        server.routes[("GET", "/v1/models")] = (200, r.LLAMACPP_MODELS)
        server.props = r.LLAMACPP_PROPS
        replied, answers = _discover_with(server, preload)
        assert not replied.wait(0.5)  # held behind the import (a wrong route would answer within this)
        _release(fifo)
        assert replied.wait(30)
        [(found, stack_done)] = answers
        assert (found.window, found.detail) == (8192, "llama.cpp /props n_ctx") and stack_done


def test_a_discovered_window_ends_the_serve_loops_hold_for_deltas() -> None:
    """The window goes to the agent at once, like a stream's last message, not after DELTA_BATCH_S for deltas to join
    it: an answer that came before it waits for it in the agent (ADR 0052), 7-10 ms measured (ADR 0059)."""
    import multiprocessing

    from dashfloat.channel import Channel
    from dashfloat.llm._serve import _Loop
    from dashfloat.protocol import AgentToLlm

    ours, theirs = multiprocessing.Pipe()
    loop = _Loop(Channel[AgentToLlm](ours, AgentToLlm, "agent->llm"), Preload(()))
    try:
        assert not loop._ending()  # nothing queued: a delta may be held for others to join it
        ask = DiscoverWindow(request_id=1, provider=ProviderConfig(name="local", base_url=LOCAL, model="m"))
        loop._discovered(ask, WindowFound(1, 8192, "server", "llama.cpp /props n_ctx", ""))
        assert loop._ending()
    finally:
        os.close(loop._wake_r)
        os.close(loop._wake_w)
        ours.close()
        theirs.close()
