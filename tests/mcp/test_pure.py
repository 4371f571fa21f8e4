"""The MCP client's pure parts (ADR 0086): what the model reads of a result, the catalogue and its search, argument
parsing, rules, the config tables, a project's approval, and /mcp's report."""

from __future__ import annotations

import base64
from pathlib import Path

import msgspec
import pytest

from dashfloat.agent._mcp import McpSession
from dashfloat.catalogue import (
    MCP_NAME_MAX_CHARS,
    MCP_SCHEMA_WINDOW_SHARE,
    MCP_SEARCH_MAX_TOOLS,
    mcp_catalogue,
    mcp_name,
    mcp_tool_object,
    tokens_of,
)
from dashfloat.config import ConfigError, load_config, mcp_servers
from dashfloat.executor._mcp_link import NO_PREVIEW, PREVIEW_ARGUMENT_LINES, preview_lines
from dashfloat.jsonvalue import JsonObject
from dashfloat.mcp import MCP_RESULT_HEAD_BYTES, MCP_RESULT_MAX_BYTES, capped, result_of, search
from dashfloat.mcp._results import search_result
from dashfloat.mcp_project import approve, approved, load_project_mcp, merged
from dashfloat.permissions import RuleError, call_scope, parse_rule, verdict
from dashfloat.permissions import SourcedRule as Sourced
from dashfloat.protocol import (
    McpCallArgs,
    McpSearchArgs,
    McpServerConfig,
    McpServerInfo,
    McpServersListed,
    McpTool,
    McpToolResult,
    result_json,
)
from dashfloat.tool_args import explained, parse_args


def tool(name: str, description: str = "", size: int = 0) -> McpTool:
    schema = {"type": "object", "properties": {"x": {"type": "string", "description": "y" * size}}}
    return McpTool(name, description, msgspec.json.encode(schema).decode())


def names(tools: list[JsonObject]) -> list[str]:
    return [str(msgspec.convert(t, dict)["function"]["name"]) for t in tools]


def ready(name: str, *tools: McpTool) -> McpServerInfo:
    return McpServerInfo(name, "ready", list(tools), pid=1)


# ---------------------------------------------------------------- results


def test_a_result_at_the_cap_is_whole_and_one_byte_past_it_keeps_head_and_tail() -> None:
    at = capped("a" * MCP_RESULT_MAX_BYTES)
    assert not at.truncated and at.total_bytes == MCP_RESULT_MAX_BYTES
    text = "H" * MCP_RESULT_HEAD_BYTES + "m" * (MCP_RESULT_MAX_BYTES - MCP_RESULT_HEAD_BYTES) + "T"
    past = capped(text)
    assert past.truncated and past.total_bytes == MCP_RESULT_MAX_BYTES + 1
    head, _, tail = past.text.partition("\n[… 1 bytes cut from the middle …]\n")
    assert head == "H" * MCP_RESULT_HEAD_BYTES and tail.endswith("T")
    assert len(head.encode()) + len(tail.encode()) == MCP_RESULT_MAX_BYTES


def test_images_audio_and_resources_are_named_with_their_size_not_shown() -> None:
    png = base64.b64encode(b"\x89PNG" + b"\0" * 2044).decode()
    result = result_of(
        {
            "content": [
                {"type": "text", "text": "before"},
                {"type": "image", "mimeType": "image/png", "data": png},
                {"type": "audio", "mimeType": "audio/wav", "data": base64.b64encode(b"x" * 10).decode()},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": base64.b64encode(b"z" * 3).decode()}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"},
                {"type": "other"},
            ]
        }
    )
    assert result.text.splitlines() == [
        "before",
        "[image: image/png, 2.0 KiB, not shown]",
        "[audio: audio/wav, 10 bytes, not shown]",
        "[resource file:///a.txt (text/plain)]",
        "inside",
        "[resource file:///b.bin: ?, 3 bytes, not shown]",
        "[resource link file:///c: c]",
        "[other content, not shown]",
    ]
    assert not result.is_error


def test_structured_content_alone_is_read_as_json_and_an_error_result_is_not_ok() -> None:
    result = result_of({"content": [], "structuredContent": {"a": 1}, "isError": True})
    assert result.text == '{"a":1}' and result.is_error
    assert msgspec.json.decode(result_json(result)) == {"ok": False, "content": '{"a":1}', "truncated": False,
                                                          "total_bytes": 7}  # fmt: skip


# ---------------------------------------------------------------- names, the catalogue and the search


def test_a_tool_name_a_provider_refuses_is_made_safe_and_cut_at_its_bound() -> None:
    assert mcp_name("git", "git status/ü") == "mcp__git__git_status__"
    assert len(mcp_name("s", "t" * (MCP_NAME_MAX_CHARS - len("mcp__s__")))) == MCP_NAME_MAX_CHARS
    assert len(mcp_name("s", "t" * MCP_NAME_MAX_CHARS)) == MCP_NAME_MAX_CHARS


def test_schemas_within_the_share_are_sent_and_one_token_past_it_only_the_search() -> None:
    servers = [ready("a", tool("one", "first")), ready("b", tool("two", "second"))]
    cost = sum(tokens_of(mcp_tool_object(s.name, t)) for s in servers for t in s.tools)
    window = int(cost / MCP_SCHEMA_WINDOW_SHARE) + 1  # the share is just above the cost
    tools, searched = mcp_catalogue(servers, window)
    assert names(tools) == ["mcp__a__one", "mcp__b__two"] and not searched
    tools, searched = mcp_catalogue(servers, int((cost - 1) / MCP_SCHEMA_WINDOW_SHARE))
    assert names(tools) == ["mcp_search"] and searched
    assert mcp_catalogue([], 1000) == ([], False)


def test_a_server_not_ready_adds_the_search_beside_the_ready_ones_tools() -> None:
    servers = [ready("a", tool("one")), McpServerInfo("lazy", "stopped", start="lazy")]
    tools, searched = mcp_catalogue(servers, None)
    assert names(tools) == ["mcp__a__one", "mcp_search"] and searched
    assert "lazy (not started: a search starts it)" in str(tools[-1])


def test_the_search_ranks_name_matches_first_and_returns_at_most_its_bound() -> None:
    flood = ready("f", *(tool(f"flood_{i:03d}", "a flood tool") for i in range(200)))
    other = ready("time", tool("get_current_time", "Get the current time in a time zone"), tool("convert_time"))
    assert [t.name for _, t in search([flood, other], "current time")] == ["get_current_time", "convert_time"]
    assert len(search([flood, other], "flood")) == MCP_SEARCH_MAX_TOOLS
    found = msgspec.json.decode(search_result([flood, other], "zone").text)
    assert found["tools"][0]["name"] == "mcp__time__get_current_time" and "parameters" in found["tools"][0]
    nothing = search_result([other], "banana")
    assert "no MCP tool matches 'banana'" in nothing.text and "get_current_time" in nothing.text


# ---------------------------------------------------------------- arguments and rules


def test_mcp_calls_parse_as_any_object_and_the_search_needs_a_query() -> None:
    parsed = parse_args("mcp__git__git_log", {"repo_path": "/r", "max_count": 3})
    assert parsed == McpCallArgs("mcp__git__git_log", '{"repo_path":"/r","max_count":3}')
    assert isinstance(parsed, McpCallArgs) and (parsed.server, parsed.tool) == ("git", "git_log")
    assert parse_args("mcp__git", {}) == "mcp__git: an MCP tool is named mcp__<server>__<tool>"
    assert parse_args("mcp__git__x", [1]) == "mcp__git__x: arguments must be a JSON object"
    assert parse_args("mcp_search", {"query": "log"}) == McpSearchArgs("log")
    error = parse_args("mcp_search", {"query": " "})
    assert isinstance(error, str) and "non-empty" in error
    assert explained("mcp_search", error) == f"{error}; the call was not run"


def test_rules_name_a_whole_server_or_one_tool_and_always_grants_the_one_tool() -> None:
    call = McpCallArgs("mcp__git__git_commit", "{}")
    for text, covers in [("mcp__git", True), ("mcp__git__*", True), ("mcp__git__git_commit", True),
                         ("mcp__git__git_log", False), ("mcp__gi", False), ("mcp__time", False)]:  # fmt: skip
        rule = Sourced(parse_rule(text, "allow"), "allow", "test")
        assert verdict([rule], call, "/w")[0] == ("allow" if covers else "ask"), text
    deny = Sourced(parse_rule("mcp__git", "deny"), "deny", "test")
    assert verdict([deny], call, "/w")[0] == "deny"
    assert call_scope(call) == parse_rule("mcp__git__git_commit", "allow")
    assert call_scope(McpSearchArgs("x")) is None
    with pytest.raises(RuleError, match="an MCP rule is"):
        parse_rule("mcp__a__b__c(x)", "allow")


# ---------------------------------------------------------------- confirmation


def test_a_confirmation_names_server_tool_description_arguments_and_that_no_preview_exists() -> None:
    info = ready("git", tool("git_commit", "Records changes to the repository"))
    args = McpCallArgs("mcp__git__git_commit", '{"message":"m"}')
    lines, full = preview_lines(args, info, "sandboxed (workspace-write, no network)")
    assert lines == [
        "MCP server git · tool git_commit · sandboxed (workspace-write, no network)",
        "  Records changes to the repository",
        "arguments:",
        "  {",
        '    "message": "m"',
        "  }",
        NO_PREVIEW,
    ]
    many = McpCallArgs("mcp__git__git_commit", msgspec.json.encode({f"k{i}": i for i in range(60)}).decode())
    lines, full = preview_lines(many, None, "x")
    assert "(its description is not known" in lines[1] and full.count('"k') == 60
    assert sum('"k' in line for line in lines) == PREVIEW_ARGUMENT_LINES - 1  # the "{" line counts
    assert lines[-2].startswith("  [… ") and lines[-1] == NO_PREVIEW


# ---------------------------------------------------------------- config, the project's file, /mcp


def write_config(tmp_path: Path, text: str) -> dict[str, str]:
    (tmp_path / "cfg" / "dashfloat").mkdir(parents=True, exist_ok=True)
    (tmp_path / "cfg" / "dashfloat" / "config.toml").write_text(text)
    return {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOME": str(tmp_path)}


def test_mcp_servers_are_read_from_config_toml(tmp_path: Path) -> None:
    env = write_config(
        tmp_path,
        '[mcp.servers.git]\ncommand = "uvx"\nargs = ["mcp-server-git"]\nstart = "lazy"\n'
        '[mcp.servers.gh]\nurl = "https://example.com/mcp"\nheaders_env = { Authorization = "GH_TOKEN" }\n',
    )
    git, gh = mcp_servers(env)
    assert (git.name, git.command, git.args, git.start, git.sandbox) == ("git", "uvx", ["mcp-server-git"], "lazy", True)
    assert (gh.url, gh.headers_env) == ("https://example.com/mcp", {"Authorization": "GH_TOKEN"})


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ('[mcp.servers.a__b]\ncommand = "x"\n', "a server's name is letters"),
        ("[mcp.servers.a]\n", "give either command"),
        ('[mcp.servers.a]\ncommand = "x"\nurl = "http://h"\n', "give either command"),
        ('[mcp.servers.a]\ncommand = "x"\ntimeout_s = 0\n', "timeout_s: must be above 0"),
        ('[mcp.servers.a]\nurl = "http://h"\nheaders_env = { A = "1x" }\n', "is not an environment variable"),
        ('[mcp.servers.a]\ncommand = "x"\nwhat = 1\n', "what"),
    ],
)
def test_a_bad_server_table_is_named(tmp_path: Path, table: str, error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        load_config(write_config(tmp_path, table))


def test_a_project_file_is_approved_per_project_and_per_content(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".dashfloat").mkdir(parents=True)
    mcp_file = project / ".dashfloat" / "mcp.toml"
    mcp_file.write_text('[mcp.servers.local]\ncommand = "./server"\n')
    state = str(tmp_path / "state")
    proposed = load_project_mcp(str(project))
    assert proposed is not None and not approved(state, proposed)
    approve(state, proposed)
    assert approved(state, proposed)
    mcp_file.write_text('[mcp.servers.local]\ncommand = "./other"\n')
    changed = load_project_mcp(str(project))
    assert changed is not None and not approved(state, changed)  # asked again: the content changed
    user = [McpServerConfig("local", command="mine")]
    assert [s.command for s in merged(user, changed)] == ["mine"]  # the user's own server of that name wins
    assert load_project_mcp(str(tmp_path)) is None
    mcp_file.write_text("[other]\n")
    with pytest.raises(ConfigError, match="unknown field"):
        load_project_mcp(str(project))


def test_the_session_reports_state_tools_and_tokens_and_approves_a_project(tmp_path: Path) -> None:
    (tmp_path / ".dashfloat").mkdir()
    (tmp_path / ".dashfloat" / "mcp.toml").write_text('[mcp.servers.proj]\ncommand = "p"\n')
    project = load_project_mcp(str(tmp_path))
    session = McpSession([McpServerConfig("git", command="g")], project, str(tmp_path / "state"))
    assert "proposes MCP servers (proj: p)" in session.proposed()[0].text
    said = session.listed(McpServersListed([McpServerInfo("git", "failed", error="it could not start: x")]))
    assert [e.text for e in said] == ["MCP server git failed: it could not start: x"]
    assert session.listed(McpServersListed([McpServerInfo("git", "failed", error="again")])) == []  # said once
    session.listed(McpServersListed([ready("git", tool("git_log", "Shows the log"))]))
    report = session.report(100_000)
    cost = tokens_of(mcp_tool_object("git", tool("git_log", "Shows the log")))
    assert f"git: ready (pid 1), startup, 1 tools, {cost} tokens" in report
    assert f"mcp__git__git_log ({cost} tokens) Shows the log" in report
    assert msgspec.json.decode(session.tools_json(100_000))[0]["function"]["name"] == "mcp__git__git_log"
    assert "approved the MCP servers" in session.approve().text
    assert project is not None and approved(str(tmp_path / "state"), project)
    assert [c.name for c in session.configs] == ["git", "proj"] and session.configure() is not None
    assert "no MCP servers wait" in session.approve().text
    assert "no MCP server is configured" in McpSession([]).report(None) and McpSession([]).configure() is None


def test_a_huge_result_is_one_mcp_tool_result() -> None:
    assert isinstance(capped("x" * (MCP_RESULT_MAX_BYTES * 4)), McpToolResult)
