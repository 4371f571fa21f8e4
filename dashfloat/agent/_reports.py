"""What the slash commands that only report print: /usage, /status, /permissions, /last, /sessions, /rewind's list.
``answer`` reads the core and never moves the turn; the texts are pure functions of what it passes.

ADR 0063 (the plurals), 0066 (the git line's note), 0068 (the command environment's line), 0084 (/status).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, assert_never

import msgspec

from dashfloat.agent._context import estimate, fill_percent, tokens_text
from dashfloat.command_env import describe_env
from dashfloat.permissions import SourcedRule
from dashfloat.protocol import (
    ApprovalMode,
    ConversationEntry,
    LastResultShown,
    ListPermissions,
    ListPrompts,
    ListSessions,
    PromptInfo,
    PromptsListed,
    SandboxState,
    SessionsListed,
    ShowLastResult,
    ShowStatus,
    ShowUsage,
    SystemEntry,
    ToolReply,
    Usage,
    WindowSource,
)
from dashfloat.sandbox_access import network_detail, sandbox_detail

if TYPE_CHECKING:
    from dashfloat.agent._core import AgentCore

Report = ShowUsage | ShowStatus | ShowLastResult | ListPermissions | ListSessions | ListPrompts
"""The UI's requests that only report: answered whatever the turn's phase, the turn untouched."""


def answer(core: AgentCore, request: Report) -> None:
    """The report ``request`` asks for, to the UI."""
    match request:
        case ShowUsage():
            core.ui(SystemEntry(text=core_usage(core)))
        case ShowStatus():  # issue 37: a real /status
            core.ui(SystemEntry(text=status_report(status_facts(core))))
        case ShowLastResult():  # issue 37: /last, Ctrl-O
            core.ui(last_result(core.transcript, core.user_reply))
        case ListPermissions():
            core.ui(SystemEntry(text=core_permissions(core)))
        case ListSessions():
            skipped: list[str] = []
            core.ui(SessionsListed(sessions=core.journal.list_sessions(skipped)))
            core.outbox += [("ui", SystemEntry(text=line, level="warning")) for line in skipped]
        case ListPrompts():
            prompts = [PromptInfo(n, text) for n, text in enumerate(core.prompts(), 1)]
            core.ui(PromptsListed(session_id=core.journal.session_id, prompts=prompts))
        case _:
            assert_never(request)


def core_usage(core: AgentCore) -> str:
    """/usage: the core's window and its fill, what commands' environment leaves out, tokens by turn."""
    window = core.window
    tokens = estimate(core.request_messages(), core.calibration) if window.size is not None else 0
    line = window_report(window.size, window.source, window.detail, tokens, core.compact_at_percent, core.compactions)
    if core.provider.reasoning_effort is not None:  # the effort in force (/model @EFFORT changes it)
        line += f"\nreasoning effort: {core.provider.reasoning_effort} (/model @EFFORT changes it)"
    return usage_report(line, core.sandbox, core.turn_usage)


def core_permissions(core: AgentCore) -> str:
    """/permissions: every rule in force, numbered, with where it comes from."""
    return permissions_report(core.approval, core.read_only_commands, core.rules.all())


_WHERE = {"config": "configured", "server": "reported by the server", "table": "known model", "assumed": "ASSUMED"}


def count(n: int, noun: str) -> str:
    """``1 turn``, ``2 turns``: /usage said ``in 1 turns`` (found in tmux, ADR 0063)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def window_report(
    window: int | None, source: WindowSource | None, detail: str, tokens: int, compact_at_percent: int, compactions: int
) -> str:
    """The window, where it came from, and how full the next request (``tokens``) would be."""
    if window is None:
        return "context window: not known yet (asking the server)"
    source = source or "assumed"
    where = _WHERE[source]
    # A configured window's detail says where it was set (the demo: its own); a found one's adds to the source.
    why = (detail or where) if source == "config" else where + (f", {detail}" if detail else "")
    return (
        f"context window: {tokens_text(window)} tokens ({why}); "
        f"fill: ~{tokens_text(tokens)} ({fill_percent(tokens, window)}%); "
        f"compacts at {compact_at_percent}%; {count(compactions, 'compaction')} this session"
    )


def usage_report(window_line: str, sandbox: SandboxState, turn_usage: Sequence[Usage]) -> str:
    """/usage: the window and its fill, what commands' environment leaves out, then tokens of this
    session by turn."""
    environment = describe_env(sandbox.hide_env, sandbox.pass_env)
    if not turn_usage:
        return f"{window_line}\n{environment}\nno usage reported yet in this session"
    # Cached and reasoning tokens only when the provider reports them (OpenAI's *_tokens_details, DeepSeek's cache).
    details = any(u.cached_tokens is not None or u.reasoning_tokens is not None for u in turn_usage)
    rows = [window_line, environment, "turn  prompt  completion  total" + ("  cached  reasoning" if details else "")]
    for turn, usage in enumerate(turn_usage, 1):
        row = f"{turn:<4}  {usage.prompt_tokens:>6}  {usage.completion_tokens:>10}  {usage.total_tokens:>5}"
        if details:
            row += f"  {_maybe(usage.cached_tokens):>6}  {_maybe(usage.reasoning_tokens):>9}"
        rows.append(row)
    total = sum(u.total_tokens for u in turn_usage)
    rows.append(f"all   {tokens_text(total)} tokens in {count(len(turn_usage), 'turn')}")
    return "\n".join(rows)


def _maybe(tokens: int | None) -> str:
    """A count the provider may not report: ``-`` when it did not."""
    return "-" if tokens is None else str(tokens)


def permissions_report(approval: ApprovalMode, read_only_commands: bool, rules: Sequence[SourcedRule]) -> str:
    """/permissions: every rule in force, numbered, with where it comes from."""
    lines = [f"approval mode: {approval}"]
    if read_only_commands:
        lines.append(
            "read-only commands (ls, cat, head, tail, wc, rg, grep, find, git status|log|diff|show) run unasked"
        )
    if not rules:
        lines.append("no permission rules (a at a confirmation grants one for this session)")
    if any(r.effect == "allow" and r.rule.prefix[:1] == ("git",) for r in rules):
        lines.append(
            "git lines a rule allows run without hooks, pager, editor, fsmonitor or diff programs, nor the"
            " programs the repository's own config names (filters, drivers, aliases, signing, ssh, credentials)"
        )
    for n, sourced in enumerate(rules, 1):
        lines.append(f"{n:>3}  {sourced.effect:<5}  {sourced.rule.text()}  ({sourced.source})")
    if rules:
        lines.append("/permissions remove N drops one; /permissions save N keeps a session grant in your rule file")
    return "\n".join(lines)


class StatusFacts(msgspec.Struct, frozen=True):
    """What /status reports, gathered by the core (ADR 0084)."""

    provider: str
    base_url: str
    model: str
    window_line: str
    approval: ApprovalMode
    rules: int
    sandbox: SandboxState
    session_id: str
    session_file: str
    turn_usage: tuple[Usage, ...] = ()
    # ---- lines other features add (issue 37 leaves the place): the sandbox's and the network's own detail,
    # background jobs. Each is one finished line; empty ones are left out.
    sandbox_detail: str = ""
    network_detail: str = ""
    jobs: str = ""


def status_report(facts: StatusFacts) -> str:
    """/status: who answers, the window and its fill, what runs without asking, the sandbox, the session."""
    total = sum(u.total_tokens for u in facts.turn_usage)
    usage = (
        f"usage: {tokens_text(total)} tokens in {count(len(facts.turn_usage), 'turn')} (/usage: by turn)"
        if facts.turn_usage
        else "usage: no usage reported yet in this session"
    )
    rules = f", {count(facts.rules, 'permission rule')} (/permissions lists them)" if facts.rules else ""
    sandbox = facts.sandbox
    if sandbox.unavailable:
        confinement = f"sandbox: NOT sandboxed ({sandbox.unavailable})"
    else:
        net = "network on" if sandbox.network else "no network"
        # The network line below says the whole of it (registries through the proxy is neither on nor off).
        said_below = bool(facts.network_detail)
        confinement = f"sandbox: {sandbox.mode}" + (f", {net}" if sandbox.mode != "off" and not said_below else "")
    session = facts.session_id or "none yet (saved with the first message)"
    lines = [
        f"provider: {facts.provider} ({facts.base_url})" if facts.base_url else f"provider: {facts.provider}",
        f"model: {facts.model}",
        facts.window_line,
        usage,
        f"approval mode: {facts.approval}{rules} (Shift-Tab or /approve changes it)",
        confinement,
        describe_env(sandbox.hide_env, sandbox.pass_env),
        facts.sandbox_detail,
        facts.network_detail,
        f"session: {session}",
        f"session file: {facts.session_file}" if facts.session_file else "",
        facts.jobs,
    ]
    return "\n".join(line for line in lines if line)


def status_facts(core: AgentCore) -> StatusFacts:
    """The core's state as /status reports it."""
    window = core.window
    tokens = estimate(core.request_messages(), core.calibration) if window.size is not None else 0
    line = window_report(window.size, window.source, window.detail, tokens, core.compact_at_percent, core.compactions)
    writer = getattr(core.journal, "writer", None)  # the session log's (a journal that keeps nothing has none)
    return StatusFacts(
        provider=core.provider.name,
        base_url=core.provider.base_url,
        model=core.provider.model,
        window_line=line,
        approval=core.approval,
        rules=len(core.rules.all()),
        sandbox=core.sandbox,
        sandbox_detail=sandbox_detail(core.sandbox),  # issue 35: the writable paths
        network_detail=network_detail(core.sandbox),  # issue 35: the network mode and the allowlist
        session_id=core.journal.session_id,
        session_file=str(writer.path) if writer is not None else "",
        turn_usage=tuple(core.turn_usage),
        jobs=f"jobs: {count(len(core.running_jobs), 'running job')} (/jobs lists them)" if core.running_jobs else "",
    )


def last_result(transcript: Sequence[ConversationEntry], user_reply: ToolReply | None = None) -> LastResultShown:
    """/last: the newest tool result, all of what was kept of it (the executor's bound): ``user_reply``, the person's
    own ``!command`` when none of the model's came after it (it is not in the conversation until the next prompt),
    else the conversation's newest."""
    from dashfloat.agent._summary import result_status, result_text

    newest = next((entry for entry in reversed(transcript) if isinstance(entry, ToolReply)), None)
    if user_reply is not None:
        newest = user_reply
    if newest is None:
        return LastResultShown(name="", status="ok", output="")
    return LastResultShown(name=newest.name, status=result_status(newest.result), output=result_text(newest.result))
