"""Permission rules and the read-only allowlist: the pure module, with examples and properties."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashfloat.permissions import (
    SHELL_META,
    Rule,
    RuleError,
    SourcedRule,
    call_scope,
    command_scope,
    matches,
    no_scope_reason,
    parse_rule,
    read_only_command,
    verdict,
)
from dashfloat.protocol import EditFileArgs, ExecuteCommandArgs, ReadFileArgs, ToolArgs, WriteFileArgs

CWD = "/work/p"


def cmd(line: str) -> ExecuteCommandArgs:
    return ExecuteCommandArgs(command=line)


@pytest.mark.parametrize(
    ("line", "scope"),
    [
        ("npm test", ("npm", "test")),
        ("npm test -- --watch", ("npm", "test")),
        ("git diff HEAD~1", ("git", "diff")),
        ("pytest -q tests", ("pytest", "-q", "tests")),
        ("pytest -q tests/test_x.py", ("pytest", "-q")),
        ("npm -s test", ("npm", "-s", "test")),
        ("make -j4 test", ("make", "-j4", "test")),
        ("ls -la", ("ls", "-la")),
        ("cargo build --release", ("cargo", "build")),
        ("make", ("make",)),
        ("python tools/gen.py --out x", ("python", "tools/gen.py")),
        ("./run.sh fast", ("./run.sh", "fast")),
        ("ls src/app.py", ("ls",)),
    ],
)
def test_always_is_scoped_to_program_and_subcommand(line: str, scope: tuple[str, ...]) -> None:
    assert command_scope(line) == Rule("execute_command", prefix=scope)


@pytest.mark.parametrize(
    "line",
    [
        "npm test && rm -rf /",
        "npm test; curl x | sh",
        "echo $(id)",
        "echo `id`",
        "cat a > b",
        "sort < a",
        "npm test &",
        "FOO=1 npm test",
        "python -c 'import os'",
        "python3 -m http.server",
        "python",
        "node -e 'x'",
        "bash -c 'ls'",
        "sh script.sh",
        "env rm x",
        "xargs rm",
        "sudo ls",
        "awk '{print}' f",
        "sed -i s/a/b/ f",
        "perl -e 1",
        "npm test 'unclosed",
        "git",
        "git --no-pager diff",
        "git -c core.pager=sh log",
        "",
    ],
)
def test_lines_with_shell_syntax_inline_code_or_wrappers_cannot_be_scoped(line: str) -> None:
    assert command_scope(line) is None
    assert call_scope(cmd(line)) is None


def test_file_tools_are_scoped_to_the_tool_in_the_workspace() -> None:
    assert call_scope(EditFileArgs(path="a.py", search_block="a", replace_block="b")) == Rule("edit_file")
    assert call_scope(ReadFileArgs(path="a.py")) is None


def test_an_allow_rule_covers_its_prefix_only_and_never_a_compound_line() -> None:
    rule = parse_rule("execute_command(npm test)", "allow")
    assert matches(rule, "allow", cmd("npm test --watch"), CWD)
    assert not matches(rule, "allow", cmd("npm install evil"), CWD)
    assert not matches(rule, "allow", cmd("npm test; rm -rf ~"), CWD)
    assert not matches(rule, "allow", cmd("npm"), CWD)
    assert not matches(rule, "allow", WriteFileArgs(path="x", content=""), CWD)


def test_a_deny_rule_covers_its_prefix_anywhere_in_a_line() -> None:
    rule = parse_rule("execute_command(rm)", "deny")
    for line in ("rm -rf x", "ls; rm x", "ls && /bin/rm x", "echo $(rm x)"):
        assert matches(rule, "deny", cmd(line), CWD), line
    assert not matches(rule, "deny", cmd("ls rmdir"), CWD)
    assert matches(parse_rule("execute_command", "deny"), "deny", cmd("ls"), CWD)


def test_path_patterns_are_relative_to_the_workspace() -> None:
    rule = parse_rule("write_file(secrets/*)", "deny")
    assert matches(rule, "deny", WriteFileArgs(path="secrets/a.env", content=""), CWD)
    assert matches(rule, "deny", WriteFileArgs(path="/work/p/secrets/a.env", content=""), CWD)
    assert matches(rule, "deny", WriteFileArgs(path="./x/../secrets/k", content=""), CWD)
    assert not matches(rule, "deny", WriteFileArgs(path="src/a.py", content=""), CWD)


def test_deny_wins_and_names_the_rule() -> None:
    rules = [
        SourcedRule(parse_rule("execute_command(git push)", "allow"), "allow", "cfg"),
        SourcedRule(parse_rule("execute_command(git push)", "deny"), "deny", "project"),
    ]
    assert verdict(rules, cmd("git push origin"), CWD) == ("deny", rules[1])
    assert verdict(rules[:1], cmd("git push origin"), CWD) == ("allow", rules[0])
    assert verdict(rules, cmd("git status"), CWD) == ("ask", None)


@pytest.mark.parametrize(
    ("text", "effect", "problem"),
    [
        ("execute_command", "allow", "needs a command prefix"),
        ("execute_command(npm test && x)", "allow", "not a plain command prefix"),
        ("execute_command(bash -c x)", "allow", "cannot be allowed: bash runs other programs"),
        ("execute_command(python -c x)", "allow", "inline code"),
        ("read_file", "allow", "never asks"),
        ("delete_everything", "deny", "unknown tool"),
        ("write_file(/etc/*)", "deny", "relative to the workspace"),
        ("write_file(../x)", "allow", "relative to the workspace"),
        ("edit_file(", "allow", "expected TOOL or TOOL(SPEC)"),
    ],
)
def test_malformed_rules_say_what_is_wrong(text: str, effect: str, problem: str) -> None:
    with pytest.raises(RuleError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        parse_rule(text, effect)  # type: ignore[arg-type]


def test_no_allow_rule_covers_git_options_before_the_subcommand() -> None:
    # git -c / --exec-path / --config-env name programs to run: "always allow git" must not cover them.
    rule = Rule("execute_command", prefix=("git",))
    assert matches(rule, "allow", cmd("git status"), CWD)
    for line in ("git -c alias.x=!sh x", "git --exec-path=/tmp/x status", "git -c core.pager=sh log"):
        assert not matches(rule, "allow", cmd(line), CWD)


WORD = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=8)


@given(st.lists(WORD, min_size=1, max_size=5), st.sampled_from(sorted(SHELL_META)), st.lists(WORD, max_size=3))
def test_no_allow_rule_ever_covers_a_line_with_shell_syntax(head: list[str], meta: str, tail: list[str]) -> None:
    line = shlex.join(head) + f" {meta} " + shlex.join(tail)
    scope = command_scope(shlex.join(head))
    if scope is not None:
        assert not matches(scope, "allow", cmd(line), CWD)
    assert command_scope(line) is None and read_only_command(line) is None


@given(st.lists(WORD, min_size=1, max_size=6))
def test_a_scope_covers_the_line_it_was_made_from_and_round_trips_as_text(words: list[str]) -> None:
    line = shlex.join(words)
    scope = command_scope(line)
    if scope is None:
        return
    assert matches(scope, "allow", cmd(line), CWD)
    assert parse_rule(scope.text(), "allow") == scope


# ---------------------------------------------------------------- read-only commands


@pytest.mark.parametrize(
    "line",
    [
        "ls -la src",
        "cat README.md",
        "head -n 5 a.py",
        "tail -n 20 log.txt",
        "tail -n20 log.txt",
        "grep -rn -e foo src",
        "wc -l a b",
        "rg foo",
        "rg -n 'def main' src",
        "grep -rn TODO .",
        "find . -name '*.py'",
        "git status",
        "git log --oneline -5",
        "git diff HEAD~1 -- a.py",
        "git show HEAD",
        "git branch --list",
        "git branch -a --list",
    ],
)
def test_read_only_commands_run_unasked(line: str) -> None:
    assert read_only_command(line) is not None


@pytest.mark.parametrize(
    "line",
    [
        "rg foo > out",
        "rg --pre ./evil foo",
        "rg --pre=./evil foo",
        "rg -z foo",
        "rg --hostname-bin=./evil foo",
        "find . -exec rm {} ;",
        "find . -delete",
        "find . -fprint out",
        "find . -fprintf out %p",
        "tail -f log",
        "tail -fn1 log",
        "tail -n1 -F log",
        "grep -f/etc/shadow x",
        "grep -rf~/.ssh/id_rsa x",
        "grep -f../secret x",
        "cat /etc/passwd",
        "cat ~/.ssh/id_rsa",
        "cat ../other/secret",
        "grep --file=/etc/shadow x",
        "git push",
        "git -c core.pager=evil status",
        "git -C /tmp status",
        "git branch new-branch",
        "git branch -D main --list",
        "git diff --output=x",
        "git diff --ext-diff",
        "git log --show-signature",
        "sort -o x y",
        "sed -n 1p a",
        "less a",
        "cat a | sh",
        "GIT_DIR=/x git status",
        "ls $(rm x)",
    ],
)
def test_anything_that_could_write_run_code_or_read_outside_asks(line: str) -> None:
    assert read_only_command(line) is None


def test_git_runs_with_the_repositorys_programs_neutralised() -> None:
    line = read_only_command("git diff HEAD")
    assert line is not None
    for needle in ("--no-pager", "core.fsmonitor=false", "diff.external=", "--no-ext-diff", "--no-textconv"):
        assert needle in line
    assert line.endswith("HEAD")


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (cmd("npm test"), ""),
        (WriteFileArgs(path="a", content=""), ""),
        (cmd("ls | head"), "the line has shell syntax"),
        (cmd("bash -c x"), "bash runs other programs or inline code"),
        (cmd("FOO=1 make"), "it starts with an environment assignment"),
        (ReadFileArgs(path="a"), "this tool is confirmed each time"),
    ],
)
def test_the_reason_no_always_is_offered(args: ToolArgs, reason: str) -> None:
    assert no_scope_reason(args) == reason
