"""A real LLM stream process on a real Pipe, shared by the tests of one worker."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import random
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dashfloat.channel import Channel
from dashfloat.llm import serve
from dashfloat.llm._route import FORCE_REQUESTS_ENV
from dashfloat.protocol import (
    AssembledCall,
    ChatMessage,
    LlmToAgent,
    ProviderConfig,
    Shutdown,
    StartStream,
    StreamDone,
    StreamFailed,
)
from dashfloat.testing.sse_server import ScriptedServer

TLS_DIR = Path(__file__).parent / "tls"
"""A self-signed certificate for 127.0.0.1 (the TLS provider tests)."""

TEST_KEY_ENV = "DASHFLOAT_TEST_LLM_KEY"
TEST_KEY = "sk-test-not-a-real-key"
# The child reads keys from its own environment: it is set before the process is spawned.
os.environ[TEST_KEY_ENV] = TEST_KEY

_ids = itertools.count(1)


def varied(length: int, alphabet: str = "abcdefghijklmnopqrstuvwxyz ,.") -> str:
    """Text that never loops (the repetition guard would stop a stream of one repeated character)."""
    return "".join(random.Random(length).choices(alphabet, k=length))


@dataclass
class Result:
    """Everything one request produced, in order."""

    messages: list[Any] = field(default_factory=list)

    @property
    def terminal(self) -> Any:
        return self.messages[-1]

    @property
    def done(self) -> StreamDone:
        assert isinstance(self.terminal, StreamDone), self.terminal
        return self.terminal

    @property
    def failed(self) -> StreamFailed:
        assert isinstance(self.terminal, StreamFailed), self.terminal
        return self.terminal

    def of(self, kind: type) -> list[Any]:
        return [m for m in self.messages if isinstance(m, kind)]

    def text(self, kind: type) -> str:
        return "".join(m.text for m in self.of(kind))


ROUTES = ("plain", "requests")
"""The LLM process's two routes to a local plain-HTTP server (ADR 0048): http.client, or requests when forced."""


class Llm:
    """The agent's end of the pipe to a real ``serve`` process; ``env``: set in the child's environment (it reads
    it at spawn)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=serve, args=(child,), daemon=True)
        previous = {name: os.environ.get(name) for name in env or {}}
        os.environ.update(env or {})
        try:
            self.process.start()
        finally:
            for name, value in previous.items():
                if value is None:
                    del os.environ[name]
                else:
                    os.environ[name] = value
        child.close()
        self.channel: Channel[Any] = Channel(self.conn, LlmToAgent, "llm->agent")

    def start(
        self,
        base_url: str,
        model: str = "m",
        idle_timeout_s: float = 5.0,
        messages: list[ChatMessage] | None = None,
        idle_timeout_from: str = "",
        first_byte_timeout_s: float = 5.0,
        **provider: Any,
    ) -> int:
        request_id = next(_ids)
        config = ProviderConfig(name="test", base_url=base_url, model=model, **provider)
        messages = messages or [ChatMessage(role="user", content="hi")]
        self.channel.send(
            StartStream(
                request_id,
                config,
                messages,
                idle_timeout_s,
                idle_timeout_from,
                first_byte_timeout_s=first_byte_timeout_s,
            )
        )
        return request_id

    def collect(self, request_id: int, timeout_s: float = 10.0) -> Result:
        result = Result()
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            assert left > 0 and self.channel.poll(left), f"no terminal message for {request_id}: {result}"
            message = self.channel.recv()
            if message.request_id != request_id:
                continue  # a late answer to an earlier, failed test
            result.messages.append(message)
            if isinstance(message, StreamDone | StreamFailed):
                return result

    def run(self, base_url: str, timeout_s: float = 10.0, **kwargs: Any) -> Result:
        return self.collect(self.start(base_url, **kwargs), timeout_s)

    def close(self) -> None:
        self.channel.send(Shutdown())
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
        self.conn.close()


@pytest.fixture(scope="session")
def plain_llm() -> Iterator[Llm]:
    """The LLM process as it runs: a local plain-HTTP server is asked through http.client."""
    process = Llm()
    yield process
    process.close()


@pytest.fixture(scope="session")
def llm(plain_llm: Llm) -> Llm:
    return plain_llm


@pytest.fixture(scope="session")
def requests_llm() -> Iterator[Llm]:
    """An LLM process whose every request goes through requests (FORCE_REQUESTS_ENV), as a hosted API's does."""
    process = Llm({FORCE_REQUESTS_ENV: "1"})
    yield process
    process.close()


@pytest.fixture(params=ROUTES)
def route_llm(request: pytest.FixtureRequest) -> Llm:
    """Each route in turn (a module that overrides ``llm`` with it runs its tests through both)."""
    fixture = f"{request.param}_llm"
    process: Llm = request.getfixturevalue(fixture)
    return process


@pytest.fixture(params=ROUTES)
def first_contact_llm(request: pytest.FixtureRequest) -> Iterator[Llm]:
    """An LLM process of the test's own, each route in turn, for a test of what a process does at its first contact
    with a server (the /props question, the tools warning, its one connection): the session's processes remember
    that per base URL, and a test's server may get the port an earlier test's server had (seen under load: the
    /props question was not asked again)."""
    process = Llm({FORCE_REQUESTS_ENV: "1"} if request.param == "requests" else None)
    yield process
    process.close()


@pytest.fixture
def tls_server() -> Iterator[ScriptedServer]:
    """The scripted server over TLS, with the self-signed certificate in tests/llm/tls."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS_DIR / "cert.pem", TLS_DIR / "key.pem")
    with ScriptedServer(tls=context) as scripted:
        yield scripted


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def written(call: AssembledCall) -> Any:
    """The arguments of a call that parsed, as the model wrote them (decoded); None for a call that did not."""
    return msgspec.json.decode(call.arguments) if call.args is not None else None
