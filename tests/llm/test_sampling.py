"""Issue 39, ADR 0092: per-provider sampling settings (``temperature``, ``top_p``, ``extra_body``), from a real
config file to the request a real server receives; a bad value is named with its file and field."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from dashfloat.config import REQUEST_OWN_FIELDS, TEMPERATURE_RANGE, ConfigError, ProviderFlags, resolve_provider
from dashfloat.llm._request import request_body
from dashfloat.protocol import ChatMessage, ProviderConfig
from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.llm.conftest import Llm

BASE = '[providers.local]\nbase_url = "http://127.0.0.1:8080/v1"\nmodel = "qwen"\n'


def resolved(tmp_path: Path, text: str) -> ProviderConfig:
    (tmp_path / "dashfloat").mkdir(exist_ok=True)
    (tmp_path / "dashfloat" / "config.toml").write_text(text)
    provider = resolve_provider(ProviderFlags(), {"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)})
    assert provider is not None
    return provider


def refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        resolved(tmp_path, text)
    message = str(caught.value)
    assert message.startswith(str(tmp_path / "dashfloat" / "config.toml") + ": providers.local.")
    return message


def test_sampling_settings_from_the_file_reach_the_server_as_configured(tmp_path: Path, llm: Llm) -> None:
    text = BASE + "temperature = 0.2\ntop_p = 0.8\n[providers.local.extra_body]\ntop_k = 20\nrepeat_penalty = 1.05\n"
    provider = resolved(tmp_path, text)
    assert (provider.temperature, provider.top_p) == (0.2, 0.8)
    assert provider.extra_body == {"top_k": 20, "repeat_penalty": 1.05}
    with ScriptedServer() as server:
        server.enqueue(text_reply("ok"))
        fields = msgspec.structs.asdict(provider)
        del fields["name"], fields["base_url"], fields["model"]
        assert llm.run(server.base_url, **fields).done.content == "ok"
    sent = server.requests[0]
    assert (sent["temperature"], sent["top_p"], sent["top_k"], sent["repeat_penalty"]) == (0.2, 0.8, 20, 1.05)


def test_nothing_configured_sends_no_sampling_field(tmp_path: Path) -> None:
    body = msgspec.json.decode(request_body(resolved(tmp_path, BASE), [ChatMessage(role="user", content="hi")], ()))
    assert not {"temperature", "top_p", "top_k"} & set(body)  # the server's own defaults apply


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (f"temperature = {TEMPERATURE_RANGE[1] + 0.01}", "temperature: must be between 0 and 2"),
        (f"temperature = {TEMPERATURE_RANGE[0] - 0.01}", "temperature: must be between 0 and 2"),
        ("temperature = nan", "temperature: must be between 0 and 2"),
        ('temperature = "low"', "temperature: expected a number, got a string"),
        ("top_p = 0", "top_p: must be above 0 and at most 1"),
        ("top_p = 1.01", "top_p: must be above 0 and at most 1"),
        ("extra_body = 3", "extra_body: expected a table, got an integer"),
        ("extra_body = { model = 'x' }", "extra_body.model: not allowed here: DashFloat writes it itself"),
        ("extra_body = { temperature = 0.1 }", "extra_body.temperature: not allowed here: set the provider's own"),
    ],
)
def test_a_bad_sampling_value_is_named_with_its_file_and_field(tmp_path: Path, line: str, says: str) -> None:
    assert says in refused(tmp_path, BASE + line + "\n")


@pytest.mark.parametrize("value", [TEMPERATURE_RANGE[0], TEMPERATURE_RANGE[1]])
def test_the_ends_of_the_temperature_range_are_taken(tmp_path: Path, value: float) -> None:
    assert resolved(tmp_path, BASE + f"temperature = {value}\n").temperature == value
    assert resolved(tmp_path, BASE + "top_p = 1\n").top_p == 1


def test_extra_body_never_overrides_what_the_request_writes_even_from_a_provider_built_elsewhere() -> None:
    provider = ProviderConfig(name="t", base_url="http://x/v1", model="m", extra_body={"stream": False, "seed": 7})
    body = msgspec.json.decode(request_body(provider, [ChatMessage(role="user", content="hi")], ()))
    assert body["stream"] is True and body["seed"] == 7
    assert {"model", "messages", "stream", "tools", "max_tokens"} <= REQUEST_OWN_FIELDS
