"""Issue 35 in config.toml and on the command line: [sandbox] allow_domains, deny_domains, writable and
writable_presets (a malformed entry named with the file and the field), --network registries|on|off."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashfloat.cli import parse_args
from dashfloat.config import ConfigError, config_path, load_config
from dashfloat.protocol import SandboxState
from dashfloat.sandbox_access import DEFAULT_ALLOW_DOMAINS, with_access


def _env(tmp_path: Path, body: str) -> dict[str, str]:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    path = config_path(env)
    path.parent.mkdir(parents=True)
    path.write_text(body)
    return env


def test_the_sandbox_table_takes_domains_paths_and_presets(tmp_path: Path) -> None:
    env = _env(
        tmp_path,
        '[sandbox]\nallow_domains = ["*.corp.example"]\ndeny_domains = ["rubygems.org"]\n'
        'writable = ["~/.cache/bazel"]\nwritable_presets = ["npm", "go"]\n',
    )
    config = load_config(env)
    assert config is not None
    sandbox = config.sandbox
    state = with_access(
        SandboxState(mode="workspace-write"), "registries", sandbox.allow_domains, sandbox.deny_domains,
        sandbox.writable_presets, sandbox.writable, env,
    )  # fmt: skip
    home = str(tmp_path / "home")
    assert state.writable == [f"{home}/.npm", f"{home}/go/pkg/mod", f"{home}/.cache/go-build", f"{home}/.cache/bazel"]
    assert "*.corp.example" in state.allow_domains and "rubygems.org" not in state.allow_domains
    assert set(state.allow_domains) - {"*.corp.example"} == set(DEFAULT_ALLOW_DOMAINS) - {"rubygems.org"}
    assert state.deny_domains == ["rubygems.org"] and state.network_mode == "registries" and not state.network
    on = with_access(SandboxState(mode="workspace-write"), "on", [], [], [], [], env)
    assert on.network and on.allow_domains == []


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('allow_domains = ["10.1.2.3"]', "sandbox.allow_domains[0]: '10.1.2.3' is an address"),
        ('deny_domains = ["ok.org", "bad host.org"]', "sandbox.deny_domains[1]: 'bad host.org' has characters"),
        ('writable = ["~/.ssh"]', "sandbox.writable[0]: '~/.ssh' is ~/.ssh or inside it"),
        ('writable = ["cache"]', "sandbox.writable[0]: 'cache' is not an absolute path"),
        ('writable_presets = ["npn"]', "sandbox.writable_presets[0]"),
    ],
)
def test_a_malformed_entry_is_named_with_the_file_and_the_field(tmp_path: Path, body: str, said: str) -> None:
    env = _env(tmp_path, f"[sandbox]\n{body}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(env)
    assert str(caught.value).startswith(f"{config_path(env)}: ") and said in str(caught.value)


def test_network_takes_a_mode_and_a_bare_flag_means_on() -> None:
    assert parse_args(["fix", "it"]).network is None  # launch makes that registries (config network = true: on)
    assert parse_args(["--network", "off", "fix"]).network == "off"
    assert parse_args(["--network", "registries"]).network == "registries"
    assert parse_args(["fix", "it", "--network"]).network == "on"
    with pytest.raises(SystemExit):
        parse_args(["--network", "everything"])


def test_a_sandbox_grant_is_a_rule_that_names_a_program() -> None:
    from dashfloat.permissions import RuleError, parse_rule
    from dashfloat.sandbox_access import granted, line_program

    rule = parse_rule("sandbox(npm write ~/.npm)", "allow")
    assert rule.text() == "sandbox(npm write '~/.npm')" and parse_rule(rule.text(), "allow") == rule
    assert parse_rule("sandbox(cargo network)", "allow").prefix == ("cargo", "network")
    for bad, said in (
        ("sandbox(npm network)", "can only allow"),
        ("sandbox(sh network)", "not a program a grant can name"),
        ("sandbox(npm write relative)", "expected sandbox(PROGRAM network)"),
        ("sandbox(npm)", "expected"),
    ):
        with pytest.raises(RuleError, match=said.replace("(", r"\(").replace(")", r"\)")):
            parse_rule(bad, "deny" if bad == "sandbox(npm network)" else "allow")
    assert [line_program(c) for c in ("/usr/bin/npm ci", "A=1 npm ci", "sudo npm ci", "npm ci && x", "'unclosed")] == [
        "npm",
        "",
        "",
        "",
        "",
    ]
    rules = [("npm", "write", "~/.npm"), ("npm", "network"), ("cargo", "network")]
    assert granted(rules, "npm ci", "/h") == (["/h/.npm"], True)
    assert granted(rules, "pip install x", "/h") == ([], False)
