"""The agent shell's start and end, with workers at the end of real pipes: the window discovery goes out before
the executor is forked (its imports are not on the first request's path), and both workers are asked to stop
before either is waited for."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

import dashfloat
from dashfloat.agent import AgentOptions
from dashfloat.agent._process import AgentShell
from dashfloat.agent._startup import build_core
from dashfloat.channel import Channel
from dashfloat.protocol import (
    AgentToLlm,
    AgentToUi,
    DiscoverWindow,
    ExecutorToAgent,
    LlmToAgent,
    ProviderConfig,
    Shutdown,
    StartStream,
    SubmitPrompt,
    WindowFound,
)

CHECKOUT = str(Path(dashfloat.__file__).resolve().parent.parent)


class _Worker:
    """A worker process stood in for by the far end of a pipe; records what the shell asks of it."""

    def __init__(self, name: str, union: Any, events: list[object]) -> None:
        ours, self.far = Pipe()
        self.name = name
        self.events = events
        self._channel: Channel[Any] = Channel(ours, union, name)
        self._never_r, self._never_w = os.pipe()  # a sentinel that never fires: the worker does not die here

    @property
    def channel(self) -> Channel[Any]:
        return self._channel

    @property
    def sentinel(self) -> int:
        return self._never_r

    def exit_reason(self) -> str:
        return "exit code 0"

    def ask_stop(self) -> None:
        self.events.append(("ask_stop", self.name))

    def stop(self) -> None:
        self.events.append(("stop", self.name))
        for fd in (self._never_r, self._never_w):
            os.close(fd)


class _Workers:
    def __init__(self) -> None:
        self.events: list[object] = []
        self.llm: _Worker | None = None

    def start_llm(self) -> _Worker:
        self.events.append("start_llm")
        self.llm = _Worker("llm", LlmToAgent, self.events)
        return self.llm

    def preload_executor(self) -> int | None:
        return None  # ready at once: the shell forks the executor straight after its first messages

    def start_executor(self) -> _Worker:
        assert self.llm is not None
        far: Channel[AgentToLlm] = Channel(self.llm.far, AgentToLlm, "agent->llm")
        received = []
        while far.poll():
            received.append(type(far.recv()).__name__)
        self.events.append(("start_executor", received))
        return _Worker("executor", ExecutorToAgent, self.events)


def test_the_window_discovery_goes_out_before_the_executor_is_forked_and_workers_stop_together(
    tmp_path: Path,
) -> None:
    provider = ProviderConfig(name="t", base_url="http://127.0.0.1:9/v1", model="m")
    options = AgentOptions(provider=provider, cwd=str(tmp_path))
    ui_far, ui_ours = Pipe()
    ui: Channel[AgentToUi] = Channel(ui_far, AgentToUi, "agent->ui")
    workers = _Workers()
    shell = AgentShell(ui_ours, build_core(options), workers)
    ui.send(Shutdown())
    shell.run()
    assert workers.events == [
        "start_llm",
        ("start_executor", [DiscoverWindow.__name__]),
        ("ask_stop", "llm"),
        ("ask_stop", "executor"),
        ("stop", "llm"),
        ("stop", "executor"),
    ]
    _close(ui_far, ui_ours)


def _close(*conns: Connection) -> None:
    for conn in conns:
        conn.close()


class _PreloadingWorkers(_Workers):
    """Workers whose executor code is still being imported until the test writes to ``ready``."""

    def __init__(self) -> None:
        super().__init__()
        self.ready_r, self.ready_w = os.pipe()

    def preload_executor(self) -> int | None:
        self.events.append("preload_executor")
        return self.ready_r

    def start_executor(self) -> _Worker:
        self.events.append("start_executor")
        return _Worker("executor", ExecutorToAgent, self.events)


def test_the_first_request_waits_for_the_window_not_for_the_executors_code(tmp_path: Path) -> None:
    """The prompt already sent is taken before the executor's code is imported, the request goes out as soon as the
    window is known (the executor still unforked), and the executor is forked once its code is in (ADR 0045)."""
    provider = ProviderConfig(name="t", base_url="http://127.0.0.1:9/v1", model="m")
    options = AgentOptions(provider=provider, cwd=str(tmp_path))
    ui_far, ui_ours = Pipe()
    ui: Channel[AgentToUi] = Channel(ui_far, AgentToUi, "agent->ui")
    workers = _PreloadingWorkers()
    shell = AgentShell(ui_ours, build_core(options), workers)
    ui.send(SubmitPrompt(text="hello"))
    thread = threading.Thread(target=shell.run, daemon=True)
    thread.start()
    assert workers.llm is not None
    llm: Channel[AgentToLlm] = Channel(workers.llm.far, AgentToLlm, "agent->llm")
    assert llm.poll(30)
    ask = llm.recv()
    assert isinstance(ask, DiscoverWindow)
    llm.send(WindowFound(ask.request_id, 32768, "server", "test"))
    assert llm.poll(30)
    assert isinstance(llm.recv(), StartStream)
    assert "start_executor" not in workers.events  # the request did not wait for it
    os.write(workers.ready_w, b"!")
    ui.send(Shutdown())
    thread.join(30)
    assert not thread.is_alive()
    assert workers.events[:3] == ["start_llm", "preload_executor", "start_executor"]
    for fd in (workers.ready_r, workers.ready_w):
        os.close(fd)
    _close(ui_far, ui_ours)


AGENT_CODE_IMPORTED = (
    "import importlib, sys\n"
    "import dashfloat.agent._main, dashfloat.agent._process\n"
    "from dashfloat.agent._workers import EXECUTOR_CODE\n"
    "for name in EXECUTOR_CODE:\n"
    "    module, _, attribute = name.partition(':')\n"
    "    imported = importlib.import_module(module)\n"
    "    getattr(imported, attribute) if attribute else None\n"
)
"""A fresh interpreter's script start: the agent's code, then the executor's, as the agent imports them before forking
the executor."""


def test_a_step_that_raises_prints_its_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """traceback is imported only then (ADR 0053): tests/startup/test_import_budget.py keeps it out of an idle agent,
    naming whoever imports it."""
    provider = ProviderConfig(name="t", base_url="http://127.0.0.1:9/v1", model="m")
    ui_far, ui_ours = Pipe()
    shell = AgentShell(ui_ours, build_core(AgentOptions(provider=provider, cwd=str(tmp_path))), _Workers())

    def step() -> None:
        raise RuntimeError("a step that fails")

    shell._guard(step)
    assert "Traceback" in capsys.readouterr().err
    _close(ui_far, ui_ours)


KEPT_OUT_OF_THE_IDLE_AGENT = (
    "dashfloat.agent.undo",
    "dashfloat.agent._restore",
    "dashfloat.agent._summary",
    "dashfloat.agent._reports",
    "dashfloat.agent._replay",
    "dashfloat.agent._compactor",
)
"""Modules for /undo, /rewind, a tool's result, the reporting slash commands (/usage, /permissions), a resumed
session's replay and a compaction: imported where first used, not with the agent's code."""


def test_an_idle_agent_with_a_request_in_flight_imports_none_of_the_rarely_used_modules(tmp_path: Path) -> None:
    """Its code and the executor's (as the agent imports them before forking the executor), a core built and a
    first prompt taken (its session file written, its request sent): none of KEPT_OUT_OF_THE_IDLE_AGENT, in a fresh
    interpreter (ADR 0053); the undo log still comes when asked for."""
    code = AGENT_CODE_IMPORTED + (
        "from dashfloat.agent import AgentOptions\n"
        "from dashfloat.agent._startup import build_core\n"
        "from dashfloat.protocol import ProviderConfig, StartStream, SubmitPrompt\n"
        "provider = ProviderConfig(name='t', base_url='http://127.0.0.1:9/v1', model='m')\n"
        "core = build_core(AgentOptions(provider=provider, cwd=sys.argv[1]))\n"
        "core.on_ui(SubmitPrompt(text='hello'))\n"
        "assert any(isinstance(m, StartStream) for _, m in core.outbox), core.outbox\n"
        "print(*[name for name in sys.argv[2:] if name in sys.modules] or ['none'])\n"
        "print(type(core.undo_log).__name__, 'dashfloat.agent.undo' in sys.modules)\n"
    )
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    argv = [sys.executable, "-c", code, str(tmp_path), *KEPT_OUT_OF_THE_IDLE_AGENT]
    done = subprocess.run(argv, cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["none", "UndoLog True"]


def test_a_headless_start_defines_no_dataclass_and_builds_no_session_decoder(tmp_path: Path) -> None:
    """The main process's code, the agent's, the executor's and the LLM worker's, a core built and a first prompt
    taken (its session file written, its request sent), in a fresh interpreter: ``dataclasses`` is never imported
    (each class it makes compiles its methods at import, ~0.3 ms; msgspec Structs are built in C) and the session
    log's decoders are not built (a new session only writes): ADR 0055."""
    code = AGENT_CODE_IMPORTED + (
        "import dashfloat.cli, dashfloat.launch, dashfloat.runtime.printer\n"
        "from dashfloat.llm._serve import PLAIN_STACK_MODULES, serve\n"
        "for name in PLAIN_STACK_MODULES:\n"
        "    importlib.import_module(name)\n"
        "from dashfloat.agent import AgentOptions\n"
        "from dashfloat.agent._journal import SessionJournal\n"
        "from dashfloat.agent._startup import build_core\n"
        "from dashfloat.protocol import ProviderConfig, StartStream, SubmitPrompt\n"
        "from dashfloat.sessions import _format, log\n"
        "provider = ProviderConfig(name='t', base_url='http://127.0.0.1:9/v1', model='m')\n"
        "core = build_core(AgentOptions(provider=provider, cwd=sys.argv[1], state_dir=sys.argv[2]))\n"
        "core.on_ui(SubmitPrompt(text='hello'))\n"
        "assert any(isinstance(m, StartStream) for _, m in core.outbox), core.outbox\n"
        "print('dataclasses' in sys.modules, _format._body_decoder.cache_info().currsize)\n"
        "assert isinstance(core.journal, SessionJournal) and core.journal.writer is not None\n"
        "print(len(log.load(core.journal.writer.path).messages))\n"
    )
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), str(tmp_path / "state")],
        cwd=CHECKOUT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["False 0", "1"]  # and the prompt reads back (the decoder built on demand)


def test_a_read_only_tool_round_imports_neither_the_undo_module_nor_dataclasses(tmp_path: Path) -> None:
    """A one-tool turn whose tool only reads, through its second request, in a fresh interpreter with the agent's and
    the executor's code: the undo module, and with it ``dataclasses`` and ``inspect``, stays out; it was ~7 ms of that
    turn's way (ADR 0055). A write's checkpoint still imports it (the core's undo tests)."""
    code = (
        "from dashfloat._startup.kept_out import import_msgspec\nimport_msgspec()\n"
        + AGENT_CODE_IMPORTED
        + (
            "from dashfloat.agent import AgentOptions\n"
            "from dashfloat.agent._startup import build_core\n"
            "from dashfloat.protocol import ProviderConfig, ReadFileResult, StartStream, StreamDone, SubmitPrompt\n"
            "from dashfloat.protocol import ToolFinished\n"
            "from dashfloat.tool_args import assemble\n"
            "provider = ProviderConfig(name='t', base_url='http://127.0.0.1:9/v1', model='m', context_window=32768)\n"
            "core = build_core(AgentOptions(provider=provider, cwd=sys.argv[1]))\n"
            "core.on_ui(SubmitPrompt(text='go'))\n"
            "calls = [assemble('c', 'read_file', {'path': 'a'})]\n"
            "core.on_llm(StreamDone(request_id=core.request_id, content='', tool_calls=calls,\n"
            "    finish_reason='tool_calls'))\n"
            "read = ReadFileResult(path='a', content='x', offset=1, lines=1, total_lines=1, total_bytes=1,\n"
            "    truncated=False)\n"
            "core.on_executor(ToolFinished(call_id='c', result=read))\n"
            "assert sum(isinstance(m, StartStream) for _, m in core.outbox) == 2, core.outbox\n"
            "print(*[name in sys.modules for name in ('dashfloat.agent.undo', 'dataclasses', 'inspect')])\n"
        )
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=CHECKOUT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "False"]
