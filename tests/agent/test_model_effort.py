"""/model NAME@EFFORT and /model @EFFORT (ADR 0077): the session's reasoning effort reaches the next request over
real HTTP (real agent and LLM processes), ``@default`` goes back to the launch's, /usage shows it; the UI's parsing
refuses a bad effort with the allowed ones and completes them after the ``@``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from dashfloat.agent import AgentOptions
from dashfloat.protocol import (
    AgentReady,
    AgentToUi,
    ProviderConfig,
    ReasoningEffort,
    SetModel,
    ShowModels,
    ShowUsage,
    SubmitPrompt,
    SystemEntry,
)
from dashfloat.runtime import AgentProcess
from dashfloat.testing.sse_server import ScriptedServer, text_reply
from dashfloat.ui import _commands as commands
from tests.e2e import collect, turn_over

LISTED = {"data": [{"id": "alpha"}, {"id": "beta"}], "object": "list"}


@contextmanager
def agent(server: ScriptedServer, cwd: Path, effort: ReasoningEffort | None) -> Iterator[AgentProcess]:
    """A real agent launched with ``effort`` (config.toml's or the flag's, as the launch resolved it)."""
    provider = ProviderConfig(
        name="scripted", base_url=server.base_url, model="alpha", context_window=100_000, reasoning_effort=effort
    )
    options = AgentOptions(provider=provider, cwd=str(cwd), idle_timeout_s=10.0, exec_timeout_s=10.0)
    link = AgentProcess(options, log_path=str(cwd.parent / "dashfloat.log"))
    try:
        yield link
    finally:
        link.shutdown()


def said(text: str) -> Callable[[AgentToUi], bool]:
    return lambda m: isinstance(m, SystemEntry) and text in m.text


def ask(server: ScriptedServer, link: AgentProcess) -> dict[str, Any]:
    """One prompt, one answer: the request body the server received for it."""
    server.enqueue(text_reply("ok"))
    link.send(SubmitPrompt(text="hi"))
    collect(link, turn_over)
    return server.requests[-1]


def test_the_effort_chosen_with_the_model_reaches_the_next_request_and_default_restores_the_launch_one(
    tree: Path,
) -> None:
    with ScriptedServer() as server, agent(server, tree, "medium") as link:
        server.routes[("GET", "/v1/models")] = (200, LISTED)
        assert ask(server, link)["reasoning_effort"] == "medium"

        link.send(SetModel(model="beta", effort="high"))
        collect(link, said("model set to beta, reasoning effort high (sent as reasoning_effort)"))
        body = ask(server, link)
        assert (body["model"], body["reasoning_effort"]) == ("beta", "high")

        link.send(SetModel(model="", effort="none"))  # /model @none: the effort alone
        collect(link, said("reasoning effort none (thinking off) from the next request on"))
        body = ask(server, link)
        assert (body["model"], body["reasoning_effort"]) == ("beta", "none")
        link.send(ShowUsage())
        collect(link, said("reasoning effort: none"))

        link.send(ShowModels())  # the list known: an unlisted name is refused at once
        collect(link, said("models at"))
        link.send(SetModel(model="gpt-nonexistent", effort="low"))  # refused: neither the model nor the effort
        collect(link, said("lists no such model; still using beta"))
        assert ask(server, link)["reasoning_effort"] == "none"

        link.send(SetModel(model="", effort="default"))
        collect(link, said("reasoning effort back to medium"))
        body = ask(server, link)
        assert (body["model"], body["reasoning_effort"]) == ("beta", "medium")

        link.send(SetModel(model="alpha"))  # no suffix: the model alone, the effort stays
        collect(link, lambda m: isinstance(m, AgentReady) and m.model == "alpha")
        assert ask(server, link)["reasoning_effort"] == "medium"


def test_without_a_launch_effort_default_sends_none_again_and_usage_says_nothing_of_it(tree: Path) -> None:
    with ScriptedServer() as server, agent(server, tree, None) as link:
        link.send(SetModel(model="", effort="high"))
        collect(link, said("reasoning effort high"))
        assert ask(server, link)["reasoning_effort"] == "high"
        link.send(SetModel(model="", effort="default"))
        collect(link, said("reasoning effort back to the model's own (none sent)"))
        assert "reasoning_effort" not in ask(server, link)
        link.send(ShowUsage())
        report = collect(link, said("no usage reported yet"))[-1]
        assert isinstance(report, SystemEntry) and "reasoning effort" not in report.text


def test_a_switch_undone_when_the_list_comes_undoes_its_effort(tree: Path) -> None:
    """The window is configured, so nothing asked for the list yet: the switch is made at once, checked later."""
    with ScriptedServer() as server, agent(server, tree, "medium") as link:
        server.routes[("GET", "/v1/models")] = (200, LISTED)
        link.send(SetModel(model="gpt-nonexistent", effort="low"))
        collect(link, said("model set to gpt-nonexistent, reasoning effort low"))
        collect(link, said("lists no such model; back to alpha"))
        body = ask(server, link)
        assert (body["model"], body["reasoning_effort"]) == ("alpha", "medium")


@pytest.mark.parametrize(
    ("typed", "model", "effort"),
    [
        ("qwen2.5-coder:7b@high", "qwen2.5-coder:7b", "high"),  # an Ollama tag's ':' is the name's
        ("openai/gpt-oss-120b@none", "openai/gpt-oss-120b", "none"),  # OpenRouter's '/' too
        ("beta@LOW", "beta", "low"),
        ("@medium", "", "medium"),
        ("beta@default", "beta", "default"),
        ("claude-3-5-sonnet@20240620", "claude-3-5-sonnet@20240620", None),  # Vertex's version: not a word
        ("name@latest@", "name@latest", None),  # a trailing '@' keeps a word suffix as the name's
        ("beta@", "beta", None),
        ("beta", "beta", None),
    ],
)
def test_model_takes_an_effort_after_its_last_at(typed: str, model: str, effort: str | None) -> None:
    assert commands.parse(f"/model {typed}") == commands.Send(SetModel(model=model, effort=effort))  # type: ignore[arg-type]


@pytest.mark.parametrize("typed", ["beta@hgih", "@max", "@", "beta high"])
def test_a_bad_effort_is_refused_with_the_allowed_ones(typed: str) -> None:
    refused = commands.parse(f"/model {typed}")
    assert isinstance(refused, commands.Invalid)
    assert "low|medium|high|none|default" in refused.error
    assert commands.parse("/model") == commands.Send(ShowModels())


def test_completion_offers_the_efforts_after_the_at() -> None:
    completer = commands.SlashCompleter(models=lambda: ["beta", "bet"])

    def offered(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert offered("/model beta@h") == ["high"]
    assert offered("/model @") == ["low", "medium", "high", "none", "default"]
    assert offered("/model qwen3:8b@d") == ["default"]
    assert offered("/model be") == ["beta", "bet"]  # the names, as before
