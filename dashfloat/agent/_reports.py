"""What the slash commands that only report print: /usage and /status, /permissions. Pure: the core passes its state.

ADR 0063 (the plurals), 0066 (the git line's note), 0068 (the command environment's line).
"""

from __future__ import annotations

from collections.abc import Sequence

from dashfloat.agent._context import fill_percent, tokens_text
from dashfloat.command_env import describe_env
from dashfloat.permissions import SourcedRule
from dashfloat.protocol import ApprovalMode, SandboxState, Usage, WindowSource

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
    """/usage and /status: the window and its fill, what commands' environment leaves out, then tokens of this
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
