"""What the agent does with one tool call: pure functions, tested as a table (tests/agent/test_decide.py).

``decide`` runs before anything about the call is sent: fail it, deny it, refuse it, run it unasked (a read, a
read-only command, a command a rule or the mode allows) or preview it. ``asks_after_preview`` runs when the
preview is back: that is where a turn asks for a confirmation. ``confirmation`` is what it then shows.
Decision records: docs/decisions/0002-confirmations.md, 0026-permissions.md, 0039 (writes in .git always ask),
0066 (an allowed git line is rewritten), 0073 (this module).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

import msgspec

from dashfloat.catalogue import mutates
from dashfloat.permissions import (
    Rule,
    SourcedRule,
    call_scope,
    no_scope_reason,
    read_only_command,
    ruled_git_line,
    verdict,
)
from dashfloat.protocol import (
    ApprovalMode,
    AssembledCall,
    ConfirmRequested,
    EditFileArgs,
    ExecuteCommandArgs,
    PreviewReady,
    SandboxGrant,
    SandboxPolicy,
    SandboxState,
    ToolArgs,
    WriteFileArgs,
)
from dashfloat.sandbox_access import SANDBOX_RULE_TOOL, granted, line_program

Approver = Literal["keypress", "rule", "flag"]
Approval = tuple[Approver, str]
"""Who let a mutation run, and the rule's text or the mode (``ChangeRecorded.approved_by`` and ``rule``)."""

PLAN_REFUSAL: Final = (
    "not run: plan mode — nothing may change. Read, search and plan; describe the changes you would make and "
    "wait for the user to leave plan mode (/approve ask)"
)
PROTECTED_NO_SCOPE: Final = "writes in .git/ always ask"
"""The key line's note on a protected write (the confirmation's ``always_asks`` says why at length)."""
UNPARSED: Final = "the call's arguments did not parse"


class Fail(msgspec.Struct, frozen=True):
    """The call cannot run (its arguments did not parse): its result is ``error``."""

    error: str


class Deny(msgspec.Struct, frozen=True):
    """A deny rule matches: the call is not run, and ``error`` names the rule."""

    error: str


class Refuse(msgspec.Struct, frozen=True):
    """Plan mode: nothing may change, so the mutation is refused with ``error``."""

    error: str


class RunUnasked(msgspec.Struct, frozen=True):
    """A call that changes nothing (read, list): run as asked, no confirmation, no change record."""

    args: ToolArgs


class RunReadOnly(msgspec.Struct, frozen=True):
    """A command on the read-only allowlist: ``args`` holds its neutralised line, run in the read-only sandbox."""

    args: ExecuteCommandArgs


class RunAllowed(msgspec.Struct, frozen=True):
    """A command a rule or the mode allows: run without asking (``args``: a rule's git line rewritten, ADR 0066)."""

    args: ExecuteCommandArgs
    approval: Approval


class PreviewThenRun(msgspec.Struct, frozen=True):
    """A write or edit a rule or the mode allows: previewed for the record, then run unless it is protected."""

    approval: Approval


class Ask(msgspec.Struct, frozen=True):
    """Preview the mutation, then ask the user."""


Decision = Fail | Deny | Refuse | RunUnasked | RunReadOnly | RunAllowed | PreviewThenRun | Ask


def decide(
    call: AssembledCall,
    rules: Sequence[SourcedRule],
    approval: ApprovalMode,
    sandbox: SandboxState,
    read_only_commands: bool,
    cwd: str,
) -> Decision:
    """The call's fate before anything is sent: deny rules first, then the read-only allowlist, plan mode, the allow
    rules and the approval mode; what is left is previewed and asked."""
    args = call.args
    if args is None:
        return Fail(call.error or UNPARSED)
    if not mutates(args):
        return RunUnasked(args)
    permit, rule = verdict(rules, args, cwd)
    if permit == "deny":
        assert rule is not None
        return Deny(f"denied by the rule {rule.rule.text()} ({rule.source}): do not retry it; ask the user")
    line = read_only_line(args, sandbox, read_only_commands)
    if line is not None:
        assert isinstance(args, ExecuteCommandArgs)
        return RunReadOnly(msgspec.structs.replace(args, command=line))
    if approval == "plan":
        return Refuse(PLAN_REFUSAL)
    if permit == "allow" or approved_by_mode(approval, args):
        by: Approval = ("rule", rule.rule.text()) if rule is not None else ("flag", f"--approve {approval}")
        if not isinstance(args, ExecuteCommandArgs):
            return PreviewThenRun(by)  # previewed for the record (and its digest): what is recorded is what lands
        # A rule's git line runs without the programs the repository names (ADR 0066); the record keeps what the
        # model asked. --approve all runs lines as written: it allows any program.
        ruled = ruled_git_line(args.command) if permit == "allow" else args.command
        return RunAllowed(msgspec.structs.replace(args, command=ruled), by)
    return Ask()


def read_only_line(args: ToolArgs, sandbox: SandboxState, read_only_commands: bool) -> str | None:
    """The neutralised line of a read-only command that runs unasked, else None."""
    if not read_only_commands or not isinstance(args, ExecuteCommandArgs):
        return None
    if sandbox.mode == "off":
        return None  # unconfined, a workspace symlink lets `cat notes` read ~/.ssh: such a line asks
    if args.cwd not in (".", "", "./"):
        return None  # another cwd: asked, like any command (its path is the executor's to check)
    return read_only_command(args.command)


def approved_by_mode(approval: ApprovalMode, args: ToolArgs) -> bool:
    """``--approve all`` lets every mutation run, ``--approve edits`` writes and edits."""
    if approval == "all":
        return True
    return approval == "edits" and isinstance(args, WriteFileArgs | EditFileArgs)


def asks_after_preview(approved: Approval | None, preview: PreviewReady) -> bool:
    """The preview is back: ask the user, unless a rule or the mode approved the call and the write is not a
    protected one (inside .git: asked whatever allowed it, ADR 0039)."""
    return approved is None or bool(preview.protected)


def confirmation(ref: int, call: AssembledCall, preview: PreviewReady) -> ConfirmRequested:
    """The confirmation a previewed call shows: its preview, and the rule "always" would add (none when protected)."""
    assert call.args is not None  # only a parsed call is previewed
    scope = None if preview.protected else call_scope(call.args)
    return ConfirmRequested(
        ref=ref,
        id=call.id,
        subject=call.args,
        lines=preview.lines,
        summary=preview.summary,
        full=preview.full,
        scope=scope.text() if scope is not None else "",
        no_scope=PROTECTED_NO_SCOPE if preview.protected else no_scope_reason(call.args),
        always_asks=preview.protected,
    )


# ---- the sandbox's escalation (issue 35, ADR 0082): a command the sandbox refused, re-run once on a keypress

ESCALATION_NO_ALWAYS: Final = "the line starts with no program a grant can name: this run only"
"""The key line's note on an escalation "always" cannot be offered for (a wrapper, an assignment, shell syntax)."""


def escalates(grant: SandboxGrant | None, sandbox: SandboxState, policy: SandboxPolicy, escalated: bool) -> bool:
    """Whether a finished command is offered a re-run with what the sandbox refused it: a person is there (never
    headless), it ran in the workspace-write sandbox (not the read-only allowlist's), and not already escalated."""
    return grant is not None and sandbox.escalation and not policy.private_home and not escalated


def escalated_policy(policy: SandboxPolicy, grant: SandboxGrant) -> SandboxPolicy:
    """The re-run's confinement: the same, with the refused paths writable and the network where it was refused."""
    writable = list(dict.fromkeys([*policy.writable, *grant.writable]))
    return msgspec.structs.replace(policy, network=policy.network or grant.network, writable=writable)


def grant_rules(command: str, grant: SandboxGrant) -> list[Rule]:
    """The rules "always" adds for an escalation: the grant for every later command of the line's program (none
    when the line names no program a grant can: ``sandbox_access.line_program``)."""
    program = line_program(command)
    if not program:
        return []
    rules = [Rule(SANDBOX_RULE_TOOL, prefix=(program, "write", path)) for path in grant.writable]
    return rules + ([Rule(SANDBOX_RULE_TOOL, prefix=(program, "network"))] if grant.network else [])


def escalation(ref: int, call: AssembledCall, grant: SandboxGrant) -> ConfirmRequested:
    """The confirmation that offers the re-run: what was refused, what the re-run would get, and the rules "always"
    would add for the program."""
    assert isinstance(call.args, ExecuteCommandArgs)
    adds = [f"{path} writable" for path in grant.writable] + (["the whole network"] if grant.network else [])
    scope = ", ".join(rule.text() for rule in grant_rules(call.args.command, grant))
    return ConfirmRequested(
        ref=ref,
        id=call.id,
        subject=call.args,
        lines=[f"the sandbox refused: {grant.refused}", f"re-run this exact command once with {' and '.join(adds)}?"],
        summary="sandbox refused",
        full=call.args.command,
        scope=scope,
        no_scope="" if scope else ESCALATION_NO_ALWAYS,
    )


def ruled_policy(policy: SandboxPolicy, rules: Sequence[SourcedRule], command: str, home: str) -> SandboxPolicy:
    """``policy`` with what the allow rules ``sandbox(PROGRAM …)`` grant the line's program (an "always" of an
    escalation, or a saved one)."""
    prefixes = [r.rule.prefix for r in rules if r.effect == "allow" and r.rule.tool == SANDBOX_RULE_TOOL]
    writable, network = granted(prefixes, command, home)
    if not writable and not network:
        return policy
    return escalated_policy(policy, SandboxGrant(refused="", writable=writable, network=network))
