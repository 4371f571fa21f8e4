"""The per-call decision as a table: each row a call, the rules, the mode and the sandbox, and what the turn does."""

from __future__ import annotations

from typing import Literal

import msgspec
import pytest

from dashfloat.agent._decide import (
    PLAN_REFUSAL,
    PROTECTED_NO_SCOPE,
    UNPARSED,
    Approval,
    Ask,
    Decision,
    Deny,
    Fail,
    PreviewThenRun,
    Refuse,
    RunAllowed,
    RunReadOnly,
    RunUnasked,
    asks_after_preview,
    confirmation,
    decide,
)
from dashfloat.jsonvalue import JsonObject
from dashfloat.permissions import SourcedRule, parse_rule, read_only_command, ruled_git_line
from dashfloat.protocol import (
    ApprovalMode,
    AssembledCall,
    ExecuteCommandArgs,
    PreviewReady,
    ReadFileArgs,
    SandboxState,
)
from dashfloat.tool_args import assemble

CWD = "/work/tree"
CONFINED = SandboxState(mode="workspace-write")
UNCONFINED = SandboxState(mode="off")


def call(name: str, **args: str) -> AssembledCall:
    fields: JsonObject = dict(args)
    return assemble("c1", name, fields)


def cmd(command: str, cwd: str = ".") -> AssembledCall:
    return call("execute_command", command=command, cwd=cwd)


WRITE = call("write_file", path="notes.md", content="x")
EDIT = call("edit_file", path="notes.md", search_block="a", replace_block="b")
RM = cmd("rm -rf build")
LS = cmd("ls -la")
GIT_COMMIT = cmd("git commit -m wip")


def rule(text: str, effect: Literal["allow", "deny"], source: str = "rules.toml") -> SourcedRule:
    return SourcedRule(parse_rule(text, effect), effect, source)


def line(assembled: AssembledCall, command: str) -> ExecuteCommandArgs:
    assert isinstance(assembled.args, ExecuteCommandArgs)
    return msgspec.structs.replace(assembled.args, command=command)


def denied(text: str, source: str = "rules.toml") -> Deny:
    return Deny(f"denied by the rule {text} ({source}): do not retry it; ask the user")


ALLOW_RM = rule("execute_command(rm)", "allow")
ALLOW_GIT_COMMIT = rule("execute_command(git commit)", "allow")
ALLOW_WRITES = rule("write_file(notes.md)", "allow")
DENY_RM = rule("execute_command(rm)", "deny", "project")
DENY_COMMANDS = rule("execute_command", "deny")

RM_DENIED = denied("execute_command(rm)", "project")
LS_READ_ONLY = RunReadOnly(line(LS, read_only_command("ls -la") or ""))
RM_BY_RULE = RunAllowed(line(RM, "rm -rf build"), ("rule", "execute_command(rm)"))
GIT_BY_RULE = RunAllowed(line(GIT_COMMIT, ruled_git_line("git commit -m wip")), ("rule", "execute_command(git commit)"))
GIT_BY_FLAG = RunAllowed(line(GIT_COMMIT, "git commit -m wip"), ("flag", "--approve all"))
BY_EDITS = PreviewThenRun(("flag", "--approve edits"))
BY_ALL = PreviewThenRun(("flag", "--approve all"))
BY_WRITE_RULE = PreviewThenRun(("rule", "write_file(notes.md)"))
NOT_JSON = assemble("c1", "read_file", None, error="not JSON")
NO_FIELD = assemble("c1", "read_file", {})
NO_ERROR = AssembledCall("c1", "read_file", "{}")
READ = call("read_file", path="a")
READ_UNASKED = RunUnasked(ReadFileArgs(path="a"))
PLANNED = Refuse(PLAN_REFUSAL)
LS_SUB = cmd("ls", cwd="sub")

# fmt: off
TABLE: list[tuple[str, AssembledCall, list[SourcedRule], ApprovalMode, SandboxState, bool, Decision]] = [
    # what                               call        rules                mode     sandbox     r/o    decision
    ("arguments that are no JSON",       NOT_JSON,   [],                  "ask",   CONFINED,   True,  Fail("not JSON")),
    ("arguments missing a field",        NO_FIELD,   [],                  "ask",   CONFINED,   True,  Fail("")),
    ("no arguments and no error",        NO_ERROR,   [],                  "ask",   CONFINED,   True,  Fail(UNPARSED)),
    ("a read never asks",                READ,       [DENY_COMMANDS],     "plan",  UNCONFINED, False, READ_UNASKED),
    ("a write asks",                     WRITE,      [],                  "ask",   CONFINED,   True,  Ask()),
    ("an edit asks",                     EDIT,       [],                  "ask",   CONFINED,   True,  Ask()),
    ("a command asks",                   RM,         [],                  "ask",   CONFINED,   True,  Ask()),
    ("a deny rule refuses it",           RM,         [DENY_RM],           "ask",   CONFINED,   True,  RM_DENIED),
    ("deny wins over allow",             RM,         [ALLOW_RM, DENY_RM], "all",   CONFINED,   True,  RM_DENIED),
    ("deny wins over plan",              RM,         [DENY_RM],           "plan",  CONFINED,   True,  RM_DENIED),
    ("deny wins over read-only",         LS,         [DENY_COMMANDS],     "ask",   CONFINED,   True,
        denied("execute_command", "rules.toml")),
    ("a read-only line runs unasked",    LS,         [],                  "ask",   CONFINED,   True,  LS_READ_ONLY),
    ("read-only runs in plan mode",      LS,         [],                  "plan",  CONFINED,   True,  LS_READ_ONLY),
    ("not when unconfined",              LS,         [],                  "ask",   UNCONFINED, True,  Ask()),
    ("not when switched off",            LS,         [],                  "ask",   CONFINED,   False, Ask()),
    ("not in another directory",         LS_SUB,     [],                  "ask",   CONFINED,   True,  Ask()),
    ("plan mode refuses a command",      RM,         [],                  "plan",  CONFINED,   True,  PLANNED),
    ("plan wins over allow",             RM,         [ALLOW_RM],          "plan",  CONFINED,   True,  PLANNED),
    ("plan mode refuses a write",        WRITE,      [ALLOW_WRITES],      "plan",  CONFINED,   True,  PLANNED),
    ("a rule allows a command",          RM,         [ALLOW_RM],          "ask",   CONFINED,   True,  RM_BY_RULE),
    ("a rule's git line is rewritten",   GIT_COMMIT, [ALLOW_GIT_COMMIT],  "ask",   CONFINED,   True,  GIT_BY_RULE),
    ("--approve all runs it as written", GIT_COMMIT, [],                  "all",   CONFINED,   True,  GIT_BY_FLAG),
    ("a rule is named before the mode",  RM,         [ALLOW_RM],          "all",   CONFINED,   True,  RM_BY_RULE),
    ("--approve edits: not a command",   RM,         [],                  "edits", CONFINED,   True,  Ask()),
    ("--approve edits: a write",         WRITE,      [],                  "edits", CONFINED,   True,  BY_EDITS),
    ("--approve edits: an edit",         EDIT,       [],                  "edits", CONFINED,   True,  BY_EDITS),
    ("--approve all: a write",           WRITE,      [],                  "all",   CONFINED,   True,  BY_ALL),
    ("a rule allows a write",            WRITE,      [ALLOW_WRITES],      "ask",   CONFINED,   True,  BY_WRITE_RULE),
    ("a rule for another tool",          EDIT,       [ALLOW_WRITES],      "ask",   CONFINED,   True,  Ask()),
]
# fmt: on


@pytest.mark.parametrize(
    ("assembled", "rules", "approval", "sandbox", "read_only", "expected"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_decide(
    assembled: AssembledCall,
    rules: list[SourcedRule],
    approval: ApprovalMode,
    sandbox: SandboxState,
    read_only: bool,
    expected: Decision,
) -> None:
    decision = decide(assembled, rules, approval, sandbox, read_only, CWD)
    if isinstance(expected, Fail) and not expected.error:  # the parser's own words: any, but not the fallback
        assert isinstance(decision, Fail) and decision.error not in ("", UNPARSED)
        return
    assert decision == expected


def test_the_table_rewrites_a_git_line_and_neutralises_a_read_only_one() -> None:
    """The rows compare with the permissions' own functions: these show that those change the line at all."""
    assert ruled_git_line("git commit -m wip") != "git commit -m wip"
    assert read_only_command("ls -la") is not None


PREVIEW = PreviewReady(call_id="c1", lines=["+x"], digest="d", summary="+1 −0", full="+x")
PROTECTED = PreviewReady(call_id="c1", lines=["+x"], digest="d", protected="it lands inside .git")


@pytest.mark.parametrize(
    ("approved", "preview", "asks"),
    [
        (None, PREVIEW, True),
        (None, PROTECTED, True),
        (("rule", "write_file(notes.md)"), PREVIEW, False),
        (("flag", "--approve all"), PREVIEW, False),
        (("rule", "write_file(notes.md)"), PROTECTED, True),
        (("flag", "--approve all"), PROTECTED, True),
    ],
)
def test_asks_after_preview(approved: Approval | None, preview: PreviewReady, asks: bool) -> None:
    assert asks_after_preview(approved, preview) is asks


def test_a_confirmation_offers_the_scope_unless_the_write_is_protected() -> None:
    asked = confirmation(7, RM, PREVIEW)
    assert (asked.ref, asked.id, asked.subject, asked.lines, asked.summary, asked.full) == (
        7,
        "c1",
        RM.args,
        ["+x"],
        "+1 −0",
        "+x",
    )
    assert asked.scope == "execute_command(rm -rf build)" and asked.no_scope == "" and not asked.always_asks
    protected = confirmation(8, WRITE, PROTECTED)
    assert protected.scope == "" and protected.no_scope == PROTECTED_NO_SCOPE
    assert protected.always_asks == "it lands inside .git"
