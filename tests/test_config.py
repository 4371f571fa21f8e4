"""Provider configuration with real files in a temporary XDG config directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashfloat.config import (
    LIMITS_RANGES,
    OPENAI_BASE_URL,
    OPENAI_DEFAULT_MODEL,
    ConfigError,
    ProviderFlags,
    command_limits,
    idle_timeout_from,
    idle_timeout_s,
    in_toml_words,
    provider_key_envs,
    resolve_provider,
    sandbox_settings,
)
from dashfloat.protocol import CommandLimits

GOOD = """
default_provider = "local"

[settings]
idle_timeout_s = 12.5

[providers.local]
base_url = "http://localhost:11434/v1/"
model = "qwen2.5-coder"
context_window = 32768

[providers.router]
base_url = "https://openrouter.ai/api/v1"
model = "anthropic/claude-3.5-sonnet"
api_key_env = "OPENROUTER_API_KEY"
headers = { "X-Title" = "dashfloat" }
"""


def env_with(tmp_path: Path, text: str | None, **extra: str) -> dict[str, str]:
    if text is not None:
        (tmp_path / "dashfloat").mkdir(exist_ok=True)
        (tmp_path / "dashfloat" / "config.toml").write_text(text)
    return {"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path / "home"), **extra}


def error_of(tmp_path: Path, text: str | None, flags: ProviderFlags | None = None, **extra: str) -> str:
    with pytest.raises(ConfigError) as caught:
        resolve_provider(flags or ProviderFlags(), env_with(tmp_path, text, **extra))
    message = str(caught.value)
    assert "\n" not in message
    # Named by where the wrong value came from: the file, a variable or a flag.
    assert message.startswith((str(tmp_path / "dashfloat" / "config.toml"), "DASHFLOAT", "OPENAI_", "--"))
    return message


def test_nothing_configured_means_none(tmp_path: Path) -> None:
    assert resolve_provider(ProviderFlags(), env_with(tmp_path, None)) is None


def test_the_default_provider_from_the_file(tmp_path: Path) -> None:
    provider = resolve_provider(ProviderFlags(), env_with(tmp_path, GOOD))
    assert provider is not None
    assert (provider.name, provider.base_url, provider.model) == ("local", "http://localhost:11434/v1", "qwen2.5-coder")
    assert provider.api_key_env is None and provider.context_window == 32768
    config = tmp_path / "dashfloat" / "config.toml"
    assert provider.context_window_from == f"configured, providers.local.context_window in {config}"  # /usage says
    assert idle_timeout_s(env_with(tmp_path, GOOD)) == 12.5


def test_precedence_flag_over_env_over_file(tmp_path: Path) -> None:
    env = env_with(tmp_path, GOOD, DASHFLOAT_PROVIDER="router", DASHFLOAT_MODEL="env-model")
    provider = resolve_provider(ProviderFlags(), env)
    assert provider is not None
    assert (provider.name, provider.model, provider.api_key_env) == ("router", "env-model", "OPENROUTER_API_KEY")
    assert provider.headers == {"X-Title": "dashfloat"}
    flagged = resolve_provider(ProviderFlags(provider="local", model="flag-model"), env)
    assert flagged is not None and (flagged.name, flagged.model) == ("local", "flag-model")
    overridden = resolve_provider(ProviderFlags(base_url="http://127.0.0.1:8080/v1"), env)
    assert overridden is not None and overridden.base_url == "http://127.0.0.1:8080/v1"


def test_env_base_url_overrides_the_file_default_but_not_a_flagged_provider(tmp_path: Path) -> None:
    env = env_with(tmp_path, GOOD, OPENAI_BASE_URL="http://10.0.0.5:8000/v1")
    from_env = resolve_provider(ProviderFlags(), env)
    assert from_env is not None and from_env.base_url == "http://10.0.0.5:8000/v1"
    flagged = resolve_provider(ProviderFlags(provider="local"), env)
    assert flagged is not None and flagged.base_url == "http://localhost:11434/v1"


def test_environment_only(tmp_path: Path) -> None:
    key_only = resolve_provider(ProviderFlags(), env_with(tmp_path, None, OPENAI_API_KEY="sk-x"))
    assert key_only is not None
    assert (key_only.base_url, key_only.model, key_only.api_key_env) == (
        OPENAI_BASE_URL,
        OPENAI_DEFAULT_MODEL,
        "OPENAI_API_KEY",
    )
    local = resolve_provider(
        ProviderFlags(), env_with(tmp_path, None, OPENAI_BASE_URL="http://localhost:1234/v1", DASHFLOAT_MODEL="m")
    )
    assert local is not None and (local.name, local.model) == ("localhost:1234", "m")


def test_a_base_url_without_a_model_is_an_error(tmp_path: Path) -> None:
    message = error_of(tmp_path, None, OPENAI_BASE_URL="http://localhost:1234/v1")
    assert "no model for http://localhost:1234/v1" in message and "--model" in message
    # Named by where the URL came from, not a config file that does not exist (it was named before).
    assert message.startswith("OPENAI_BASE_URL: no model") and "config.toml" not in message
    flagged = error_of(tmp_path, None, ProviderFlags(base_url="http://localhost:1234/v1"))
    assert flagged.startswith("--base-url: no model for http://localhost:1234/v1")


def test_bad_toml(tmp_path: Path) -> None:
    message = error_of(tmp_path, "[providers.local\nbase_url = 1")
    assert "not valid TOML" in message


def test_wrong_types_name_the_field(tmp_path: Path) -> None:
    message = error_of(tmp_path, '[providers.local]\nbase_url = "http://x/v1"\nmodel = 3\n')
    assert message.endswith("providers.local.model: expected a string, got an integer")
    message = error_of(tmp_path, '[settings]\nidle_timeout_s = "soon"\n')
    assert "settings.idle_timeout_s: expected a number, got a string" in message
    message = error_of(tmp_path, "[providers]\nlocal = 1\n")
    assert message.endswith("providers.local: expected a table, got an integer")
    message = error_of(tmp_path, "limits = [1]\n")
    assert message.endswith("limits: expected a table, got an array")


def test_missing_field_and_unknown_field(tmp_path: Path) -> None:
    missing = error_of(tmp_path, '[providers.local]\nmodel = "m"\n')
    assert missing.endswith("providers.local.base_url: required field is missing")
    unknown = error_of(tmp_path, '[providers.local]\nbase_url = "http://x/v1"\nmodle = "m"\n')
    assert unknown.endswith("providers.local.modle: unknown field (did you mean model?)")
    unknown = error_of(tmp_path, '[providers.local]\nbase_url = "http://x/v1"\nzzz = "m"\n')
    assert unknown.endswith("providers.local.zzz: unknown field")


def test_a_misspelt_field_suggests_the_names_that_table_takes(tmp_path: Path) -> None:
    assert error_of(tmp_path, 'provider = "x"\n').endswith(
        "provider: unknown field (did you mean providers or default_provider?)"
    )
    assert error_of(tmp_path, "[settings]\nidle_timeout = 5\n").endswith(
        "settings.idle_timeout: unknown field (did you mean idle_timeout_s or first_byte_timeout_s?)"
    )
    assert error_of(tmp_path, "[sandbox]\nnetwrk = true\n").endswith(
        "sandbox.netwrk: unknown field (did you mean network?)"
    )


def test_a_key_in_the_file_is_refused_without_echoing_it(tmp_path: Path) -> None:
    message = error_of(tmp_path, '[providers.p]\nbase_url = "http://x/v1"\napi_key = "sk-secret"\n')
    assert "providers.p.api_key" in message and "api_key_env" in message and "sk-secret" not in message


def test_missing_model_in_the_file(tmp_path: Path) -> None:
    message = error_of(tmp_path, '[providers.p]\nbase_url = "http://localhost:8000/v1"\n')
    assert "providers.p.model: no model" in message


def test_unknown_provider_named_by_flag_or_env(tmp_path: Path) -> None:
    by_flag = error_of(tmp_path, GOOD, ProviderFlags(provider="nope"))
    assert "providers.nope: no such provider (asked for by --provider; known: local, router)" in by_flag
    by_env = error_of(tmp_path, GOOD, DASHFLOAT_PROVIDER="gone")
    assert "asked for by DASHFLOAT_PROVIDER" in by_env


def test_bad_url_and_bad_default(tmp_path: Path) -> None:
    assert "is not an http:// or https:// URL" in error_of(tmp_path, '[providers.p]\nbase_url = "localhost:8000"\n')
    text = 'default_provider = "x"\n[providers.p]\nbase_url = "http://h/v1"\nmodel = "m"\n'
    assert "default_provider: no provider named 'x'" in error_of(tmp_path, text)


def test_several_providers_and_no_default(tmp_path: Path) -> None:
    message = error_of(tmp_path, GOOD.replace('default_provider = "local"', ""))
    assert "several providers and no default" in message


def test_idle_timeout_from_env_and_default(tmp_path: Path) -> None:
    assert idle_timeout_s(env_with(tmp_path, None)) == 60.0
    assert idle_timeout_s(env_with(tmp_path, GOOD, DASHFLOAT_IDLE_TIMEOUT_S="3")) == 3.0
    with pytest.raises(ConfigError):
        idle_timeout_s(env_with(tmp_path, None, DASHFLOAT_IDLE_TIMEOUT_S="-1"))


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_idle_timeout_must_be_a_finite_positive_number(tmp_path: Path, value: str) -> None:
    from dashfloat.config import idle_timeout_s

    with pytest.raises(ConfigError, match="DASHFLOAT_IDLE_TIMEOUT_S"):
        idle_timeout_s({"XDG_CONFIG_HOME": str(tmp_path), "DASHFLOAT_IDLE_TIMEOUT_S": value})


def test_answer_bound_and_tool_call_mode_per_provider(tmp_path: Path) -> None:
    text = '[providers.local]\nbase_url = "http://x/v1"\nmodel = "m"\nmax_tokens = 0\ntool_calls = "text"\n'
    provider = resolve_provider(ProviderFlags(), env_with(tmp_path, text))
    assert provider is not None and (provider.max_tokens, provider.tool_calls) == (0, "text")
    default = resolve_provider(ProviderFlags(), env_with(tmp_path, GOOD))
    assert default is not None and (default.max_tokens, default.tool_calls) == (None, "auto")


def test_bad_answer_bound_or_tool_call_mode_names_the_field(tmp_path: Path) -> None:
    base = '[providers.local]\nbase_url = "http://x/v1"\nmodel = "m"\n'
    assert error_of(tmp_path, base + "max_tokens = -5\n").endswith(
        "providers.local.max_tokens: must be a number of tokens (0: never sent)"
    )
    mode = error_of(tmp_path, base + 'tool_calls = "sometimes"\n')
    assert "providers.local.tool_calls" in mode and mode.endswith("(use one of: native, text, auto)")


def test_the_idle_timeout_source_is_named_as_a_person_would_change_it(tmp_path: Path) -> None:
    assert idle_timeout_from(env_with(tmp_path, GOOD)) == f"settings.idle_timeout_s in {tmp_path}/dashfloat/config.toml"
    assert idle_timeout_from(env_with(tmp_path, GOOD, DASHFLOAT_IDLE_TIMEOUT_S="9")).startswith("DASHFLOAT_IDLE")
    assert idle_timeout_from(env_with(tmp_path, '[providers.a]\nbase_url = "http://x/v1"\n')) == ""


@pytest.mark.parametrize(
    ("flags", "extra", "origin"),
    [
        (ProviderFlags(base_url="ftp://x", model="m"), {}, "--base-url"),
        (ProviderFlags(), {"OPENAI_BASE_URL": "ftp://x", "DASHFLOAT_MODEL": "m"}, "OPENAI_BASE_URL"),
    ],
)
def test_a_bad_url_from_a_flag_or_the_environment_is_named_once(
    tmp_path: Path, flags: ProviderFlags, extra: dict[str, str], origin: str
) -> None:
    """Found running `dashfloat --base-url ftp://x`: "--base-url: --base-url: 'ftp://x' is not…"."""
    with pytest.raises(ConfigError) as caught:
        resolve_provider(flags, env_with(tmp_path, None, **extra))
    assert str(caught.value) == f"{origin}: 'ftp://x' is not an http:// or https:// URL"


LIMITS = """
[providers.local]
base_url = "http://localhost:11434/v1"
model = "m"

[limits]
max_processes = 20000
max_file_mib = 65536
"""


def test_limits_from_the_file_reach_the_executors_options_and_absent_ones_stay_the_defaults(tmp_path: Path) -> None:
    from dashfloat.cli import parse_args
    from dashfloat.launch import prepare

    assert command_limits(env_with(tmp_path, None)) == CommandLimits()
    env = env_with(tmp_path, LIMITS, XDG_STATE_HOME=str(tmp_path / "state"))
    assert command_limits(env) == CommandLimits(max_processes=20000, max_file_mib=65536)
    launch = prepare(parse_args(["--sandbox", "off", "-p", "hi"]), str(tmp_path), env)
    assert launch.options.sandbox.limits == CommandLimits(max_processes=20000, max_file_mib=65536)


@pytest.mark.parametrize("field", sorted(LIMITS_RANGES))
def test_a_limit_out_of_its_range_names_the_file_and_the_field(tmp_path: Path, field: str) -> None:
    low, high = LIMITS_RANGES[field]
    for value in (low - 1, high + 1):
        message = error_of(tmp_path, f"[limits]\n{field} = {value}\n")
        assert message == f"{tmp_path / 'dashfloat' / 'config.toml'}: limits.{field}: must be between {low} and {high}"
    for value in (low, high):
        assert getattr(command_limits(env_with(tmp_path, f"[limits]\n{field} = {value}\n")), field) == value


def test_a_limit_of_the_wrong_type_or_name_is_named(tmp_path: Path) -> None:
    assert error_of(tmp_path, '[limits]\nmax_processes = "lots"\n').endswith(
        "limits.max_processes: expected an integer, got a string"
    )
    assert error_of(tmp_path, "[limits]\nmax_file_mb = 5\n").endswith(
        "limits.max_file_mb: unknown field (did you mean max_file_mib or max_memory_mib?)"
    )


@pytest.mark.parametrize(
    ("msgspec_says", "a_reader_reads"),
    [
        ("Expected `int | null`, got `str`", "Expected an integer, got a string"),
        ("Expected `bool`, got `float`", "Expected true or false, got a number"),
        ("Expected `int | float`, got `datetime`", "Expected an integer or a number, got datetime"),
        ("Expected `null`, got `int`", "Expected nothing, got an integer"),
        ("Expected `int` >= 1", "Expected `int` >= 1"),
        ("Object missing required field `model`", "Object missing required field `model`"),
    ],
)
def test_type_errors_use_tomls_names_and_other_messages_pass_unchanged(msgspec_says: str, a_reader_reads: str) -> None:
    assert in_toml_words(msgspec_says) == a_reader_reads


def test_pass_env_names_variables_and_a_pattern_is_refused_naming_the_entry(tmp_path: Path) -> None:
    assert sandbox_settings(env_with(tmp_path, '[sandbox]\npass_env = ["GITHUB_TOKEN"]\n')).pass_env == ["GITHUB_TOKEN"]
    message = error_of(tmp_path, '[sandbox]\npass_env = ["GITHUB_TOKEN", "*TOKEN*"]\n')
    assert message.endswith("sandbox.pass_env[1]: '*TOKEN*' is not an environment variable's name")


def test_every_providers_key_variable_is_never_passed(tmp_path: Path) -> None:
    env = env_with(tmp_path, GOOD)
    current = resolve_provider(ProviderFlags(), env)
    assert current is not None
    assert provider_key_envs(env, current) == ["OPENAI_API_KEY", "OPENROUTER_API_KEY"]
    assert provider_key_envs(env_with(tmp_path / "none", None), current) == ["OPENAI_API_KEY"]
