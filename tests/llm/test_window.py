"""Window discovery: each server kind's recorded response, parsed, and asked for over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashfloat.config import is_local_url
from dashfloat.jsonvalue import JsonValue
from dashfloat.llm import _window as w
from dashfloat.llm._discover import PlainProber, discover
from dashfloat.protocol import ProviderConfig
from dashfloat.testing.sse_server import ScriptedServer
from tests.llm import window_responses as r


def test_parsers_read_each_server_kind() -> None:
    assert w.openai_models(r.VLLM_MODELS, "Qwen/Qwen2.5-Coder-7B-Instruct") == 32768
    assert w.openai_models(r.OPENROUTER_MODELS, "anthropic/claude-3.5-sonnet") == 200000
    assert w.openai_models(r.GROQ_MODELS, "llama-3.3-70b-versatile") == 131072
    assert w.llamacpp_props(r.LLAMACPP_PROPS) == 8192
    assert w.lmstudio_models(r.LMSTUDIO_V0_MODELS, "qwen2.5-coder-7b-instruct") == 4096
    assert w.ollama_ps(r.OLLAMA_PS, "qwen2.5-coder") == 16384
    assert w.ollama_show(r.OLLAMA_SHOW_NUM_CTX) == (12288, "num_ctx parameter")
    tokens, which = w.ollama_show(r.OLLAMA_SHOW)
    assert tokens == w.OLLAMA_DEFAULT_NUM_CTX and "32768" in which


def test_parsers_say_nothing_when_the_server_says_nothing() -> None:
    # llama.cpp's n_ctx_train is the trained length, not the served window; OpenAI and LM Studio's
    # /v1/models carry no length; a model that is not listed has none.
    assert w.openai_models(r.LLAMACPP_MODELS, "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf") is None
    assert w.openai_models(r.OPENAI_MODELS, "gpt-4o-mini") is None
    assert w.openai_models(r.LMSTUDIO_OPENAI_MODELS, "qwen2.5-coder-7b-instruct") is None
    assert w.openai_models(r.VLLM_MODELS, "other") is None
    assert w.ollama_ps(r.OLLAMA_PS_EMPTY, "qwen2.5-coder") is None
    junks: list[JsonValue] = [None, [], "text", 3, {"data": "x"}, {"data": [1, None]}]
    for junk in junks:
        assert w.openai_models(junk, "m") is None
        assert w.llamacpp_props(junk) is None
        assert w.lmstudio_models(junk, "m") is None
        assert w.ollama_ps(junk, "m") is None
        assert w.ollama_show(junk) == (None, "")


@pytest.mark.parametrize("value", [0, -1, 511, 10_000_001, 1e18, float("nan"), True, "8192", None])
def test_nonsense_windows_are_not_sane(value: object) -> None:
    assert w.sane(value) is None


def test_the_sane_bounds_are_crossed() -> None:
    assert w.sane(w.WINDOW_MIN_TOKENS) == w.WINDOW_MIN_TOKENS
    assert w.sane(w.WINDOW_MIN_TOKENS - 1) is None
    assert w.sane(w.WINDOW_MAX_TOKENS) == w.WINDOW_MAX_TOKENS
    assert w.sane(w.WINDOW_MAX_TOKENS + 1) is None


@given(st.integers(min_value=w.WINDOW_MIN_TOKENS, max_value=w.WINDOW_MAX_TOKENS))
def test_every_plausible_reported_window_is_taken_as_is(tokens: int) -> None:
    assert w.openai_models({"data": [{"id": "m", "max_model_len": tokens}]}, "m") == tokens
    assert w.sane(tokens) == tokens


def test_table_of_known_models_longest_prefix_wins() -> None:
    assert w.known_window("gpt-4o-mini") == 128_000
    assert w.known_window("gpt-4-0613") == 8_192
    assert w.known_window("openai/gpt-4.1-mini") == 1_047_576
    assert w.known_window("anthropic/claude-3.5-sonnet") == 200_000
    assert w.known_window("qwen2.5-coder") is None


def test_local_hosts() -> None:
    for url in (
        "http://localhost:11434/v1",
        "http://127.0.0.1:8080/v1",
        "http://192.168.1.5:1234/v1",
        "http://[::1]:8000/v1",
        "http://box.local:8000/v1",
    ):
        assert is_local_url(url), url
    for url in ("https://api.openai.com/v1", "https://8.8.8.8/v1", "https://openrouter.ai/api/v1"):
        assert not is_local_url(url), url


def _ask(server: ScriptedServer, model: str, routes: dict[tuple[str, str], Any], route: str = "requests") -> Any:
    """Discover through ``requests`` or through http.client (``plain``: a local server asked while requests is
    still being imported, ADR 0045); both must find the same."""
    server.routes.update({key: (200, body) for key, body in routes.items()})
    provider = ProviderConfig(name="t", base_url=server.base_url, model=model)
    if route == "requests":
        return discover(provider)
    prober = PlainProber(w.DISCOVERY_TIMEOUT_S)
    try:
        return discover(provider, get=prober.get)
    finally:
        prober.close()


VLLM_MODEL = "Qwen/Qwen2.5-Coder-7B-Instruct"
KINDS: dict[str, tuple[str, dict[tuple[str, str], Any], int, str]] = {
    "vllm": (VLLM_MODEL, {("GET", "/v1/models"): r.VLLM_MODELS}, 32768, "/models"),
    "llama.cpp": (
        "local",
        {("GET", "/v1/models"): r.LLAMACPP_MODELS, ("GET", "/props"): r.LLAMACPP_PROPS},
        8192,
        "llama.cpp /props n_ctx",
    ),
    "lm studio": (
        "qwen2.5-coder-7b-instruct",
        {("GET", "/v1/models"): r.LMSTUDIO_OPENAI_MODELS, ("GET", "/api/v0/models"): r.LMSTUDIO_V0_MODELS},
        4096,
        "LM Studio /api/v0/models",
    ),
    "ollama loaded": (
        "qwen2.5-coder",
        {
            ("GET", "/v1/models"): r.OLLAMA_OPENAI_MODELS,
            ("GET", "/api/ps"): r.OLLAMA_PS,
            ("POST", "/api/show"): r.OLLAMA_SHOW,
        },
        16384,
        "Ollama /api/ps context_length",
    ),
    "ollama not loaded": (
        "qwen2.5-coder",
        {("GET", "/api/ps"): r.OLLAMA_PS_EMPTY, ("POST", "/api/show"): r.OLLAMA_SHOW_NUM_CTX},
        12288,
        "Ollama /api/show num_ctx parameter",
    ),
    "openrouter": ("anthropic/claude-3.5-sonnet", {("GET", "/v1/models"): r.OPENROUTER_MODELS}, 200000, "/models"),
    "groq": ("llama-3.3-70b-versatile", {("GET", "/v1/models"): r.GROQ_MODELS}, 131072, "/models"),
}


@pytest.mark.parametrize("route", ["requests", "plain"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_discovery_over_http_for_each_server_kind(kind: str, route: str) -> None:
    model, routes, window, detail = KINDS[kind]
    with ScriptedServer() as server:
        found = _ask(server, model, routes, route)
    assert (found.window, found.source, found.detail, found.notice) == (window, "server", detail, "")
    assert server.requests == []  # discovery never reaches chat/completions


@pytest.mark.parametrize("route", ["requests", "plain"])
def test_a_server_that_says_nothing_falls_back_to_the_table_then_to_the_assumed_default(route: str) -> None:
    with ScriptedServer() as server:
        found = _ask(server, "gpt-4o-mini", {("GET", "/v1/models"): r.OPENAI_MODELS}, route)
        assert (found.window, found.source) == (128_000, "table")
        found = _ask(server, "my-finetune", {}, route)
        assert (found.window, found.source) == (w.DEFAULT_ASSUMED_WINDOW, "assumed")


@pytest.mark.parametrize("route", ["requests", "plain"])
def test_nonsense_from_the_server_is_ignored_with_a_notice(route: str) -> None:
    with ScriptedServer() as server:
        found = _ask(
            server,
            "m",
            {
                ("GET", "/v1/models"): {"data": [{"id": "m", "max_model_len": 0}]},
                ("GET", "/props"): {"default_generation_settings": {"n_ctx": -4}},
            },
            route,
        )
    assert (found.window, found.source) == (w.DEFAULT_ASSUMED_WINDOW, "assumed")
    assert "ignored a context window of 0" in found.notice and "of -4" in found.notice


def test_nothing_listening_is_answered_quickly_as_assumed() -> None:
    found = discover(ProviderConfig(name="t", base_url="http://127.0.0.1:9/v1", model="m"))
    assert (found.window, found.source) == (w.DEFAULT_ASSUMED_WINDOW, "assumed")


def test_the_props_answer_is_left_for_the_stream_only_when_the_probes_got_to_it() -> None:
    with ScriptedServer() as server:
        server.props = {"default_generation_settings": {"n_ctx": 8192}, "chat_template_caps": {"supports_tools": True}}
        left: dict[str, JsonValue] = {}
        found = discover(ProviderConfig(name="t", base_url=server.base_url, model="m"), props=left)
        assert found.detail == "llama.cpp /props n_ctx" and left == {server.base_url: server.props}
        server.routes[("GET", "/v1/models")] = (200, r.VLLM_MODELS)
        left = {}
        found = discover(ProviderConfig(name="t", base_url=server.base_url, model=VLLM_MODEL), props=left)
        assert found.detail == "/models" and left == {}  # /props was never asked: the stream asks it itself
        assert server.gets.count("/props") == 1
