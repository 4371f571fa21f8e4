"""/model with the server's list (ADR 0077): the real agent and LLM processes against a server listing three models;
the UI's parsing and completion of /model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from dashfloat.agent import AgentOptions
from dashfloat.protocol import AgentReady, AgentToUi, ProviderConfig, SetModel, ShowModels, SystemEntry
from dashfloat.runtime import AgentProcess
from dashfloat.testing.sse_server import ScriptedServer
from dashfloat.ui import _commands as commands
from dashfloat.ui.state import initial, reduce
from tests.e2e import agent_tree, collect

LISTED = {"data": [{"id": "alpha"}, {"id": "beta", "max_model_len": 8192}, {"id": "gamma"}], "object": "list"}


@contextmanager
def agent(server: ScriptedServer, cwd: Path) -> Iterator[AgentProcess]:
    """A real agent whose window is not configured: it asks the server, as /model's list does."""
    provider = ProviderConfig(name="scripted", base_url=server.base_url, model="alpha")
    options = AgentOptions(provider=provider, cwd=str(cwd), idle_timeout_s=10.0, exec_timeout_s=10.0)
    link = AgentProcess(options, log_path=str(cwd.parent / "dashfloat.log"))
    try:
        yield link
    finally:
        link.shutdown()


def said(text: str) -> Callable[[AgentToUi], bool]:
    return lambda m: isinstance(m, SystemEntry) and text in m.text


def test_model_lists_refuses_an_unknown_name_and_rediscovers_the_chosen_window(tree: Path) -> None:
    with ScriptedServer() as server, agent(server, tree) as link:
        server.routes[("GET", "/v1/models")] = (200, LISTED)
        link.send(ShowModels())
        listing = collect(link, said("models at"))[-1]
        assert isinstance(listing, SystemEntry)
        assert listing.text.splitlines()[1:] == ["* alpha", "  beta", "  gamma"]
        ready = collect(link, lambda m: isinstance(m, AgentReady))[-1]
        assert isinstance(ready, AgentReady) and ready.models == ["alpha", "beta", "gamma"]

        link.send(SetModel(model="gpt-nonexistent"))
        refused = collect(link, said("gpt-nonexistent"))[-1]
        assert isinstance(refused, SystemEntry) and refused.level == "error"
        assert "lists no such model; still using alpha" in refused.text and "  gamma" in refused.text
        still = collect(link, lambda m: isinstance(m, AgentReady))[-1]
        assert isinstance(still, AgentReady) and still.model == "alpha"

        asked = len([r for r in server.other_requests if r[1] == "/v1/models"])
        link.send(SetModel(model="beta"))
        collect(link, said("model set to beta"))
        window = collect(link, lambda m: isinstance(m, AgentReady) and m.context_window == 8192)[-1]
        assert isinstance(window, AgentReady) and window.model == "beta"
        assert len([r for r in server.other_requests if r[1] == "/v1/models"]) == asked + 1  # asked for beta's window


def test_a_server_that_lists_nothing_takes_any_name_unchecked(tree: Path) -> None:
    with ScriptedServer() as server, agent(server, tree) as link:
        link.send(SetModel(model="whatever"))  # GET /models is a 404 here
        collect(link, said("model set to whatever"))
        link.send(ShowModels())
        collect(link, said("lists no models"))


def test_model_without_a_name_asks_for_the_list_and_completes_the_names() -> None:
    assert commands.parse("/model") == commands.Send(ShowModels())
    assert commands.parse("/model beta") == commands.Send(SetModel(model="beta"))
    state = reduce(initial(0.0), AgentReady(model="a", provider="p", cwd="/", approval="ask", models=["beta", "bet"]))
    completer = commands.SlashCompleter(models=lambda: state.models)
    names = [c.text for c in completer.get_completions(Document("/model be"), CompleteEvent())]
    assert names == ["beta", "bet"]
    assert [c.text for c in completer.get_completions(Document("/model x"), CompleteEvent())] == []


def test_with_a_configured_window_the_list_is_asked_for_and_an_unlisted_switch_is_undone(tree: Path) -> None:
    """No window discovery brings the list: /model asks for it; a switch made before it came is checked then."""
    with ScriptedServer() as server, agent_tree(server, tree) as link:  # context_window configured: nothing asked
        server.routes[("GET", "/v1/models")] = (200, LISTED)
        link.send(SetModel(model="nonexistent"))
        collect(link, said("model set to nonexistent"))
        undone = collect(link, said("lists no such model"))[-1]
        assert isinstance(undone, SystemEntry) and undone.level == "error" and "back to m." in undone.text
        ready = collect(link, lambda m: isinstance(m, AgentReady))[-1]
        assert isinstance(ready, AgentReady) and ready.model == "m" and ready.models == ["alpha", "beta", "gamma"]
        link.send(ShowModels())
        collect(link, said("models at"))
        assert [r[1] for r in server.other_requests].count("/v1/models") == 1  # asked once
