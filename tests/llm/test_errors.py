"""The status-to-failure mapping as a pure function: each status, each hint, Retry-After in both forms."""

from __future__ import annotations

import email.utils
import json
import re

import pytest

from dashfloat.llm import _errors as errors_module
from dashfloat.llm._errors import (
    OptionsRejected,
    StreamError,
    not_sse_error,
    retry_after_s,
    says_context_exceeded,
    status_error,
)
from dashfloat.protocol import ProviderConfig

URL = "http://127.0.0.1:9/v1/chat/completions"
PROVIDER = ProviderConfig(name="local", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="MY_KEY")


def error_body(message: str) -> bytes:
    return json.dumps({"error": {"message": message}}).encode()


SENT = ("stream_options", "max_tokens")


def mapped(
    status: int,
    body: bytes = b"",
    retry_after: str | None = None,
    key_is_set: bool = True,
    sent: tuple[str, ...] = SENT,
) -> StreamError:
    error = status_error(status, body, retry_after, PROVIDER, URL, key_is_set, sent)
    assert isinstance(error, StreamError)
    return error


def test_auth_hints_follow_the_key_variable() -> None:
    assert "check that MY_KEY holds a valid key" in mapped(401, error_body("bad key")).message
    assert "MY_KEY is not set" in mapped(403, key_is_set=False).message
    no_env = status_error(401, b"", None, ProviderConfig("p", "u", "m"), URL, False, SENT)
    assert isinstance(no_env, StreamError) and "api_key_env for provider 'p'" in no_env.message


def test_each_status_class() -> None:
    assert mapped(404).kind == "not_found" and "'m'" in mapped(404).message and URL in mapped(404).message
    assert mapped(400, error_body("messages[0] is bad")).kind == "bad_request"
    assert "messages[0] is bad" in mapped(400, error_body("messages[0] is bad")).message
    assert mapped(422).message.endswith(": no details.")
    assert (mapped(503).kind, mapped(503).reason) == ("server_error", "server error (503)")
    assert mapped(302).kind == "not_sse"


def test_rate_limit_carries_retry_after_in_seconds_or_as_a_date() -> None:
    limited = mapped(429, retry_after="7")
    assert (limited.kind, limited.retry_after_s) == ("rate_limited", 7.0) and "in 7 s" in limited.message
    assert mapped(429).retry_after_s is None and "wait a minute" in mapped(429).message
    date = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert retry_after_s(date, now=1_000_000.0) == pytest.approx(30.0)
    assert retry_after_s("soon") is None and retry_after_s("-3") == 0.0


def test_refused_optional_fields_only_while_sending_them() -> None:
    body = error_body("Unrecognized request argument: stream_options")
    rejected = status_error(400, body, None, PROVIDER, URL, True, SENT)
    assert isinstance(rejected, OptionsRejected) and rejected.field == "stream_options"
    assert mapped(400, body, sent=("max_tokens",)).kind == "bad_request"
    body = error_body("Unsupported parameter: 'max_tokens' is not supported with this model.")
    rejected = status_error(400, body, None, PROVIDER, URL, True, SENT)
    assert isinstance(rejected, OptionsRejected) and rejected.field == "max_tokens"
    assert mapped(400, body, sent=("stream_options",)).kind == "bad_request"


def test_one_period_whatever_the_provider_wrote() -> None:
    assert mapped(401, error_body("Unauthorized.")).message.endswith("Unauthorized.")
    assert ".." not in mapped(500, error_body("Internal error...")).message
    assert not_sse_error(error_body("nope."), "application/json", URL).message.endswith(": nope.")


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ({"error": "SyntaxError", "message": "Expected ',' or '}' after property value"}, "SyntaxError: Expected ','"),
        ({"error": {"message": "model overloaded", "type": "server_error"}}, "model overloaded"),
        ({"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}, "field required"),
        ({"error": "Unauthorized", "message": "Unauthorized"}, "Unauthorized"),
        ({"error": "the key has expired", "code": 401}, "the key has expired"),
    ],
)
def test_the_most_informative_field_of_an_error_body(body: dict[str, object], shown: str) -> None:
    assert shown in mapped(400, json.dumps(body).encode()).message


def test_not_sse_bodies_say_what_they_are() -> None:
    assert "HTML page" in not_sse_error(b"  <html>", "text/html", URL).message
    assert "JSON, not an event stream: nope" in not_sse_error(error_body("nope"), "application/json", URL).message
    assert "a text/plain body" in not_sse_error(b"hello", "text/plain", URL).message


def test_failure_patterns_are_compiled_on_first_use_not_at_import() -> None:
    """The LLM worker imports this module before its loop serves (the discovery waits for it); patterns met only by a
    failure are compiled then (re caches them), not at every start: ~0.4 ms of its CPU (docs/decisions/0071)."""
    compiled = [name for name, value in vars(errors_module).items() if isinstance(value, re.Pattern)]
    assert compiled == [], f"dashfloat/llm/_errors.py compiles {compiled} at import: keep them strings"
    assert says_context_exceeded(b'{"error": {"message": "This model\'s Maximum Context Length is 8192 tokens"}}')
    assert not says_context_exceeded("the model is loading")
