"""The agent's side of MCP (ADR 0086), in process: the executor is told the servers (again after its death), the
catalogue the model gets follows their listing, an MCP call is previewed then confirmed (or run by a rule), and
/mcp reports and approves; the TUI parses /mcp."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec

from dashfloat.agent import AgentCore, AgentOptions, MemoryJournal
from dashfloat.executor._mcp_link import NO_PREVIEW
from dashfloat.mcp._host import MCP_STDERR_TAIL_BYTES, StderrTail
from dashfloat.mcp_project import load_project_mcp
from dashfloat.permissions import SourcedRule, parse_rule
from dashfloat.protocol import (
    ConfigureMcp,
    ConfirmRequested,
    McpCallArgs,
    McpServerConfig,
    McpServerInfo,
    McpServersListed,
    McpTool,
    McpToolResult,
    Message,
    PreviewReady,
    PreviewTool,
    ProviderConfig,
    RunTool,
    ShowMcp,
    StartStream,
    StreamDone,
    SubmitPrompt,
    SystemEntry,
    ToolFinished,
)
from dashfloat.tool_args import assemble
from dashfloat.ui._commands import Invalid, Send, parse
from dashfloat.ui.render import plain, render_live
from dashfloat.ui.state import CONFIRM_GUARD_S, Tick, initial, reduce

PROVIDER = ProviderConfig(name="test", base_url="http://127.0.0.1:9/v1", model="m", context_window=100_000)
TIME = McpServerConfig("time", command="mcp-server-time")
LISTED = McpServersListed([McpServerInfo("time", "ready", [McpTool("now", "The time now", "{}")], pid=7)])


def make_core(tmp_path: Path, rules: list[SourcedRule] | None = None) -> AgentCore:
    project = load_project_mcp(str(tmp_path))
    options = AgentOptions(provider=PROVIDER, cwd=str(tmp_path), mcp_servers=[TIME], mcp_project=project,
                           state_dir=str(tmp_path / "state"), rules=rules or [])  # fmt: skip
    return AgentCore(options, MemoryJournal())


def take(core: AgentCore, dest: str | None = None) -> list[Message]:
    out = [m for d, m in core.outbox if dest is None or d == dest]
    core.outbox.clear()
    return out


def names(start: StartStream) -> list[str]:
    return [t["function"]["name"] for t in msgspec.json.decode(start.extra_tools)] if start.extra_tools else []


def test_the_executor_is_told_the_servers_and_the_model_gets_their_tools_once_listed(tmp_path: Path) -> None:
    core = make_core(tmp_path)
    assert take(core, "executor") == [ConfigureMcp([TIME])]
    core.on_ui(SubmitPrompt(text="time?"))
    [start] = [m for m in take(core) if isinstance(m, StartStream)]
    assert names(start) == ["mcp_search"]  # not listed yet: the search waits for the server
    core.on_executor(LISTED)
    core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=[], finish_reason="stop"))
    take(core)
    core.on_ui(SubmitPrompt(text="again"))
    [start] = [m for m in take(core) if isinstance(m, StartStream)]
    assert names(start) == ["mcp__time__now"]
    core.on_executor_died("killed")
    assert ConfigureMcp([TIME]) in take(core, "executor")  # the fresh executor runs them again


def test_an_mcp_call_is_previewed_and_confirmed_unless_a_rule_allows_it(tmp_path: Path) -> None:
    for rules, confirmed in (([], True), ([SourcedRule(parse_rule("mcp__time", "allow"), "allow", "t")], False)):
        core = make_core(tmp_path, rules)
        core.on_executor(LISTED)
        core.on_ui(SubmitPrompt(text="time?"))
        take(core)
        call = assemble("c1", "mcp__time__now", {})
        core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=[call], finish_reason="tool_calls"))
        assert PreviewTool(call_id="c1", args=McpCallArgs("mcp__time__now", "{}")) in take(core, "executor")
        core.on_executor(PreviewReady(call_id="c1", lines=["MCP server time · tool now", "No preview"]))
        out = take(core)
        asked = [m for m in out if isinstance(m, ConfirmRequested)]
        assert bool(asked) == confirmed
        if confirmed:
            assert asked[0].lines[0] == "MCP server time · tool now" and asked[0].scope == "mcp__time__now"
            continue
        [run] = [m for m in out if isinstance(m, RunTool)]
        core.on_executor(ToolFinished(call_id=run.call_id, result=McpToolResult(text="12:00", total_bytes=5)))
        assert core.conversation[-1].result == McpToolResult(text="12:00", total_bytes=5)  # type: ignore[union-attr]


def test_mcp_reports_and_approves_a_projects_servers(tmp_path: Path) -> None:
    (tmp_path / ".dashfloat").mkdir()
    (tmp_path / ".dashfloat" / "mcp.toml").write_text('[mcp.servers.local]\ncommand = "./srv"\n')
    core = make_core(tmp_path)
    proposal = [m for m in take(core, "ui") if isinstance(m, SystemEntry) and "proposes MCP servers" in m.text]
    assert proposal and "/mcp approve" in proposal[0].text
    core.on_ui(ShowMcp())
    [report] = take(core, "ui")
    assert isinstance(report, SystemEntry) and "time: starting" in report.text
    core.on_ui(ShowMcp(approve=True))
    out = take(core)
    [configure] = [m for m in out if isinstance(m, ConfigureMcp)]
    assert [s.name for s in configure.servers] == ["time", "local"]
    assert any(isinstance(m, SystemEntry) and "approved the MCP servers" in m.text for m in out)
    assert load_project_mcp(str(tmp_path)) is not None
    assert make_core(tmp_path).mcp.project is not None  # approval is the launch's to read: the core is told


def test_the_tui_parses_mcp() -> None:
    assert parse("/mcp") == Send(ShowMcp())
    assert parse("/mcp approve") == Send(ShowMcp(approve=True))
    assert parse("/mcp now") == Invalid("usage: /mcp [approve]")


def test_a_servers_stderr_keeps_only_its_end() -> None:
    tail = StderrTail()
    tail.file.write("x" * MCP_STDERR_TAIL_BYTES + "the end")
    tail.file.close()
    deadline = time.monotonic() + 30
    while not tail.text().endswith("the end") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert tail.text().endswith("the end") and len(tail.text()) <= 500


def test_the_tui_shows_an_mcp_confirmation_and_what_always_would_allow() -> None:
    lines = ["MCP server git · tool git_commit · sandboxed (workspace-write, no network)", "arguments:", NO_PREVIEW]
    subject = McpCallArgs("mcp__git__git_commit", '{"message":"m"}')
    confirm = ConfirmRequested(ref=1, id="c", subject=subject, lines=lines, summary="MCP git", scope=subject.name)
    state = reduce(initial(0.0), confirm)
    state = reduce(reduce(state, Tick(1.0, 100, 30)), Tick(1.0 + CONFIRM_GUARD_S, 100, 30))
    shown = plain(render_live(state, (), 100))
    assert shown[0] == '⚙ mcp__git__git_commit {"message":"m"} · MCP git · v view all'
    assert [line.strip() for line in shown[1:4]] == lines
    assert shown[-1] == "y/Enter approve · n reject · Esc reject & stop · a always allow mcp__git__git_commit"
