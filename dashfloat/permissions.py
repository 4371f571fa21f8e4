"""Permission rules and the read-only command allowlist: parsing and matching, pure (no I/O, no processes).

A rule is ``TOOL`` or ``TOOL(SPEC)``:
- ``execute_command(npm test)``: a command prefix, words as ``shlex`` splits them (program and subcommand);
- ``write_file`` / ``edit_file``: the tool anywhere in the workspace, or ``edit_file(src/*.py)``: paths matching
  an ``fnmatch`` pattern, relative to the workspace.
``allow`` rules run a call without asking; ``deny`` rules refuse it; deny wins (docs/permissions.md, ADR 0026).
A git line an allow rule lets through runs as ``ruled_git_line`` rewrites it, without the repository's programs
(ADR 0066).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from collections.abc import Iterable, Sequence
from typing import Final, Literal, assert_never

import msgspec

from dashfloat.catalogue import call_name
from dashfloat.protocol import (
    MCP_TOOL_PREFIX,
    EditFileArgs,
    ExecuteCommandArgs,
    JobKillArgs,
    JobOutputArgs,
    ListDirectoryArgs,
    McpCallArgs,
    McpSearchArgs,
    ReadFileArgs,
    ToolArgs,
    WriteFileArgs,
)
from dashfloat.sandbox_access import SANDBOX_RULE_TOOL, sandbox_rule_problem

RULE_TOOLS: Final = ("execute_command", "write_file", "edit_file")
"""Tools a rule can name: the ones that ask (read_file and list_directory never do)."""
SHELL_META: Final = frozenset(";&|<>`$\n\r(){}")
"""Characters that make a line more than one plain command: operators, redirections, substitutions,
subshells, expansions. A line holding any of them (even quoted) is never auto-approved: erring strict."""
WRAPPERS: Final = frozenset(
    {
        "env", "xargs", "sudo", "doas", "su", "nohup", "timeout", "nice", "ionice", "exec", "eval", "command",
        "builtin", "time", "watch", "strace", "ltrace", "chroot", "setsid", "stdbuf", "unbuffer", "flock",
        "parallel", "busybox", "script", "runuser", "taskset", "chrt", "fakeroot", "sh", "bash", "zsh", "dash",
        "ksh", "fish", "csh", "tcsh", "awk", "gawk", "mawk", "nawk", "sed", "perl", "ruby", "php", "lua", "osascript",
    }
)  # fmt: skip
"""Programs whose arguments are themselves a program (or always inline code): never scoped, never read-only."""
INTERPRETERS: Final = re.compile(r"^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|Rscript|julia|tclsh|wish)$")
"""Interpreters: a grant names the script too (``python tools/gen.py``); inline code is never granted."""
INLINE_CODE_FLAGS: Final = frozenset({"-c", "-e", "-E", "-p", "-r", "--eval", "--print", "-m", "eval", "-"})
"""Flags (and deno's subcommand) with which an interpreter runs code given on the line or read from stdin."""

Verdict = Literal["allow", "deny", "ask"]


class RuleError(ValueError):
    """A rule that does not parse; ``str()`` says what is wrong with it."""


class Rule(msgspec.Struct, frozen=True):
    """One parsed rule: a tool and, for commands, a word prefix, or for file tools an optional path pattern."""

    tool: str
    prefix: tuple[str, ...] = ()
    pattern: str | None = None

    def text(self) -> str:
        """The rule as written in a config file (parses back to itself)."""
        if self.prefix:
            return f"{self.tool}({shlex.join(self.prefix)})"
        if self.pattern is not None:
            return f"{self.tool}({self.pattern})"
        return self.tool


class SourcedRule(msgspec.Struct, frozen=True):
    """A rule, whether it allows or denies, and where it came from (a file, or ``session``)."""

    rule: Rule
    effect: Literal["allow", "deny"]
    source: str


_RULE = re.compile(r"^\s*(?P<tool>[a-z_]+)\s*(?:\((?P<spec>.*)\))?\s*$", re.DOTALL)


def parse_rule(text: str, effect: Literal["allow", "deny"]) -> Rule:
    """The rule ``text`` means, or RuleError naming the problem."""
    if text.strip().startswith(MCP_TOOL_PREFIX):
        return mcp_rule(text.strip())
    match = _RULE.match(text)
    if match is None:
        raise RuleError("expected TOOL or TOOL(SPEC), e.g. execute_command(npm test) or edit_file")
    tool, spec = match.group("tool"), match.group("spec")
    if tool == SANDBOX_RULE_TOOL:  # a sandbox grant for a program (issue 35, ADR 0082): matches no call itself
        granted = command_words(spec or "") or []
        if why := sandbox_rule_problem(granted, effect):
            raise RuleError(f"{(spec or '').strip()!r}: {why}")
        return Rule(tool, prefix=tuple(granted))
    if tool not in RULE_TOOLS:
        if tool in ("read_file", "list_directory"):
            raise RuleError(f"{tool} never asks: it needs no rule")
        raise RuleError(f"unknown tool {tool!r} (rules name {', '.join(RULE_TOOLS)})")
    spec = spec.strip() if spec is not None else None
    if tool == "execute_command":
        if not spec:
            if effect == "deny":
                return Rule(tool)
            raise RuleError("an allow rule for execute_command needs a command prefix, e.g. execute_command(npm test)")
        words = command_words(spec)
        if words is None:
            raise RuleError(f"{spec!r} is not a plain command prefix (no shell operators, quotes must close)")
        if effect == "allow":
            problem = unscopable(words)
            if problem is not None:
                raise RuleError(f"{spec!r} cannot be allowed: {problem}")
        return Rule(tool, prefix=tuple(words))
    if spec is None or spec in ("", "*", "**"):
        return Rule(tool)
    if spec.startswith("/") or ".." in spec.split("/"):
        raise RuleError(f"{spec!r}: a path pattern is relative to the workspace and stays inside it")
    return Rule(tool, pattern=spec)


_MCP_RULE: Final = re.compile(r"^mcp__[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*(?:__(?:\*|[A-Za-z0-9_-]+))?$")


def mcp_rule(text: str) -> Rule:
    """An MCP rule (ADR 0086): ``mcp__git`` or ``mcp__git__*`` names every tool of server git, ``mcp__git__git_status``
    one tool."""
    if not _MCP_RULE.match(text):
        raise RuleError(f"{text!r}: an MCP rule is mcp__SERVER, mcp__SERVER__* or mcp__SERVER__TOOL")
    return Rule(text.removesuffix("__*"))


SUBCOMMAND = r"[A-Za-z][A-Za-z0-9:_-]*"
"""A word that reads as a subcommand (test, diff, run:dev), not a path or a value."""


def command_words(command: str) -> list[str] | None:
    """The words of a plain command line, or None when it has shell syntax beyond words or does not split."""
    if not command.strip() or any(ch in SHELL_META for ch in command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words or None


def unscopable(words: Sequence[str]) -> str | None:
    """Why no prefix grant can cover this command (None: it can be scoped)."""
    program = posixpath.basename(words[0])
    if "=" in words[0]:
        return "it starts with an environment assignment"
    if program in WRAPPERS:
        return f"{program} runs other programs or inline code"
    if program == "git" and (len(words) < 2 or words[1].startswith("-")):
        # -c, --config-env and --exec-path name programs git then runs; only "git SUBCOMMAND" can be allowed
        return "only git SUBCOMMAND can be allowed (git's options before one, such as -c, run programs)"
    if program == "git" and (flag := git_refused_flag(words[1], words[2:])) is not None:
        # the read-only allowlist refuses these too: a rule must never admit more than the allowlist does
        return f"git's {flag} writes a file or runs a program a repository's config can name"
    if INTERPRETERS.match(program):
        if len(words) < 2 or words[1].startswith("-") or words[1] in INLINE_CODE_FLAGS:
            return f"{program} would run inline code or a module (only a script file can be allowed)"
        if any(w in INLINE_CODE_FLAGS for w in words[1:]):
            return f"{program} would run inline code"
    return None


def command_scope(command: str) -> Rule | None:
    """The prefix "always allow" grants for ``command``: program and subcommand; None when it cannot be scoped."""
    words = command_words(command)
    if words is None or unscopable(words) is not None:
        return None
    program = posixpath.basename(words[0])
    if len(words) == 1:
        return Rule("execute_command", prefix=(words[0],))
    if INTERPRETERS.match(program):
        return Rule("execute_command", prefix=(words[0], words[1]))  # an interpreter's script
    # Options before the subcommand stay in the grant: "npm -s test" allows "npm -s test …", never all of npm.
    options = 0
    while 1 + options < len(words) and words[1 + options].startswith("-"):
        options += 1
    after = words[1 + options] if 1 + options < len(words) else ""
    if re.fullmatch(SUBCOMMAND, after):
        return Rule("execute_command", prefix=tuple(words[: 2 + options]))  # npm test, git diff, make -j4 test
    if options:
        return Rule("execute_command", prefix=tuple(words[: 1 + options]))  # pytest -q tests/x.py: pytest -q
    return Rule("execute_command", prefix=(words[0],))


def no_scope_reason(args: ToolArgs) -> str:
    """Why "always allow" cannot be offered for this call (the key line says it); empty when it can."""
    if call_scope(args) is not None:
        return ""
    if not isinstance(args, ExecuteCommandArgs):
        return "this tool is confirmed each time"
    words = command_words(args.command)
    if words is None:
        return "the line has shell syntax"
    return unscopable(words) or "it cannot be scoped"


def call_scope(args: ToolArgs) -> Rule | None:
    """What "always allow" on this call grants, or None when nothing safe can be granted."""
    match args:
        case ExecuteCommandArgs(command=command):
            return command_scope(command)
        case WriteFileArgs() | EditFileArgs():
            return Rule(call_name(args))
        case McpCallArgs(name=name):
            return Rule(name)  # this one tool of this one server
        case ReadFileArgs() | ListDirectoryArgs() | McpSearchArgs():
            return None  # never asked, so never granted
        case JobOutputArgs() | JobKillArgs():
            return None  # the session's own jobs (issue 36): never asked either
        case _:
            assert_never(args)


def _segments_tokens(command: str) -> list[str]:
    """All word tokens of a line, shell punctuation split off (for deny: over-matching errs strict)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return command.split()


def _workspace_path(path: str, cwd: str) -> str:
    normal = posixpath.normpath(path)
    if posixpath.isabs(normal) and (normal == cwd or normal.startswith(cwd.rstrip("/") + "/")):
        normal = posixpath.relpath(normal, cwd)
    return normal


def matches(rule: Rule, effect: Literal["allow", "deny"], args: ToolArgs, cwd: str) -> bool:
    """Whether ``rule`` covers this call. An allow rule never covers a line with shell syntax or inline code;
    a deny rule covers its prefix wherever it appears as a command's words, so ``ls; rm x`` is denied by ``rm``."""
    if isinstance(args, McpCallArgs | McpSearchArgs):  # a whole server's rule names each of its tools (ADR 0086)
        name = call_name(args)
        return name == rule.tool or (rule.tool.count("__") == 1 and name.startswith(rule.tool + "__"))
    if rule.tool != call_name(args):
        return False
    match args:
        case ExecuteCommandArgs(command=command):
            if not rule.prefix:
                return effect == "deny"
            if effect == "allow":
                words = command_words(command)
                return (
                    words is not None and unscopable(words) is None and tuple(words[: len(rule.prefix)]) == rule.prefix
                )
            tokens = _segments_tokens(command)
            head, rest = posixpath.basename(rule.prefix[0]), list(rule.prefix[1:])
            return any(
                posixpath.basename(tok) == head and tokens[i + 1 : i + 1 + len(rest)] == rest
                for i, tok in enumerate(tokens)
            )
        case (
            WriteFileArgs(path=path) | EditFileArgs(path=path) | ReadFileArgs(path=path) | ListDirectoryArgs(path=path)
        ):
            return rule.pattern is None or fnmatch.fnmatchcase(_workspace_path(path, cwd), rule.pattern)
        case JobOutputArgs() | JobKillArgs():
            return True  # a rule naming the tool covers each call of it (issue 36)
        case _:
            assert_never(args)


def verdict(rules: Iterable[SourcedRule], args: ToolArgs, cwd: str) -> tuple[Verdict, SourcedRule | None]:
    """Deny wins over allow; no matching rule: ask. The rule that decided comes back to be named."""
    allowed: SourcedRule | None = None
    for sourced in rules:
        if matches(sourced.rule, sourced.effect, args, cwd):
            if sourced.effect == "deny":
                return "deny", sourced
            allowed = allowed or sourced
    return ("allow", allowed) if allowed is not None else ("ask", None)


# ---------------------------------------------------------------- read-only commands


NO_PROGRAM: Final = "/dev/null/repository-programs-are-off"
"""The program named where a signature program was: nothing can exist below /dev/null, so git fails to start it at
once and says so (``cannot exec '/dev/null/repository-programs-are-off'``) and shows the signature as unchecked.
``false`` started, exited before reading the payload git writes it and killed git with SIGPIPE (now and then)."""
GIT_NEUTRAL_CONFIG: Final = (
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.hooksPath=/dev/null",
    "diff.external=",
    "log.showSignature=false",
    f"gpg.program={NO_PROGRAM}",
    f"gpg.openpgp.program={NO_PROGRAM}",
    f"gpg.x509.program={NO_PROGRAM}",
    f"gpg.ssh.program={NO_PROGRAM}",
    f"gpg.ssh.defaultKeyCommand={NO_PROGRAM}",
    "core.sshCommand=false",
    "protocol.allow=never",
    "submodule.recurse=false",
    "status.submoduleSummary=false",
    "diff.ignoreSubmodules=all",
    "core.untrackedCache=false",
)
"""``git -c`` settings that override a repository's own config (command-line config wins): programs named
there (fsmonitor hook, pager, external diff, the signature programs of all three formats -- ``%G?``, ``%GG``,
``%GS``, ``%GK`` run the one the signature's header picks --, ssh) are replaced by no-ops, network is refused.
Every program key of git's config is audited in docs/decisions/0066-git-programs-and-allow-rules.md."""
GIT_READ_ONLY: Final = {
    "status": frozenset(),
    "log": frozenset({"--no-ext-diff", "--no-textconv"}),
    "diff": frozenset({"--no-ext-diff", "--no-textconv"}),
    "show": frozenset({"--no-ext-diff", "--no-textconv"}),
    "branch": frozenset(),
}
"""git subcommands that only read, and the flags added so that no configured program runs."""
GIT_REFUSED_FLAGS: Final = (
    "--output", "--ext-diff", "--textconv", "--show-signature", "--exec", "-o", "--open-files-in-pager", "-O",
    "--help", "--upload-pack", "--receive-pack", "--extcmd", "--template",
)  # fmt: skip
"""Flags that write a file, run a configured program or open a pager (``--help`` runs the viewer the config's
``man.<tool>.cmd`` names; ``--template`` copies hooks in): such a line asks, allowed by a rule or not. A flag
counts with an attached value (``--output=x``, ``-ox``) and abbreviated (``--outp=x``: git takes any unique
prefix of a long option)."""
GIT_SUBCOMMAND_REFUSED: Final = {
    "rebase": ("-x",),
    "difftool": ("-x",),
    "grep": ("-O",),
    "archive": ("-o",),
    "clone": ("-u", "-c", "--config"),
}
"""Flags of one subcommand only that name a program to run (``rebase -x``, ``difftool -x``, ``grep -O``,
``clone -u``), write a file (``archive -o``) or plant config (``clone -c``); elsewhere the same letter is harmless
(``cherry-pick -x``). A short one counts anywhere in a cluster too: ``grep -nO./x.sh`` runs ./x.sh."""
BRANCH_LIST_FLAGS: Final = frozenset({"--list", "-l", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose"})
FIND_REFUSED: Final = re.compile(r"^-(exec|execdir|ok|okdir|delete|fprint|fprint0|fprintf|fls)$")
RG_REFUSED: Final = re.compile(r"^(--pre|--pre-glob|--hostname-bin|-z|--search-zip)(=.*)?$|^-[A-Za-z]*z")
READ_ONLY_PROGRAMS: Final = frozenset({"ls", "cat", "head", "tail", "wc", "rg", "grep", "find", "git"})
"""The whole allowlist. Left out on purpose: sort (-o writes), sed and awk (run code), less and more (pagers
run commands), anything that reaches the network."""
GIT_ENV: Final = (
    "export GIT_OPTIONAL_LOCKS=0 GIT_NO_LAZY_FETCH=1 GIT_ALLOW_PROTOCOL= GIT_TERMINAL_PROMPT=0 GIT_PAGER=cat PAGER=cat"
)
"""status must not rewrite the index; a partial clone must not fetch; nothing may page or prompt. An empty
``GIT_ALLOW_PROTOCOL`` allows no transport whatever the config says: a repository's ``protocol.ext.allow=always``
beats ``-c protocol.allow=never`` (the specific key wins), and a git without ``GIT_NO_LAZY_FETCH`` (before 2.39.4)
then ran the ``ext::`` command of its promisor remote on a lazy fetch."""
GIT_NO_FILTERS: Final = (
    "set --; f=$(git config --name-only --get-regexp '^filter[.]' 2>/dev/null); "
    'while IFS= read -r k; do case "$k" in "") ;; *=*) echo "not run: a filter driver name holds =" >&2; exit 2;; '
    '*) set -- "$@" -c "$k=";; esac; done <<EOF\n$f\nEOF\n'
)
"""Every filter driver the repository configures (clean, smudge, process: .gitattributes picks them per file, and
status and diff run them) overridden with an empty command, which git treats as no filter. ``git config`` only
reads files. A driver name with ``=`` would split the override wrongly, so then nothing runs."""


def _inside_workspace(word: str) -> bool:
    """A read-only command still must not read outside the workspace (the model would then send it away)."""
    if word.startswith("--"):
        value = word.partition("=")[2]
        return not value or _inside_workspace(value)
    if word.startswith("-"):  # a short option's value may be attached anywhere in a cluster: grep -rf/etc/x
        return all(_inside_workspace(word[i:]) for i in range(2, len(word)) if not word[i:].startswith("-"))
    return not (word.startswith(("/", "~")) or ".." in word.split("/"))


def _follows(word: str) -> bool:
    """tail's -f/-F, alone or in a cluster (``-fn1``), or --follow: it never ends."""
    if word.startswith("--"):
        return word.startswith("--follow")
    return word.startswith("-") and ("f" in word or "F" in word)


def read_only_command(command: str) -> str | None:
    """The line to run instead of ``command`` when it is on the read-only allowlist, else None.

    The line is ``command`` itself, or for git the same command with the repository's programs neutralised.
    """
    words = command_words(command)
    if words is None or "=" in words[0]:
        return None
    program, args = words[0], words[1:]
    if program not in READ_ONLY_PROGRAMS or not all(_inside_workspace(a) for a in args):
        return None
    match program:
        case "ls" | "cat" | "head" | "tail" | "wc" | "grep":
            if program == "tail" and any(_follows(a) for a in args):
                return None  # never ends
            return shlex.join(words)
        case "rg":
            return None if any(RG_REFUSED.match(a) for a in args) else shlex.join(words)
        case "find":
            return None if any(FIND_REFUSED.match(a) for a in args) else shlex.join(words)
        case "git":
            return _git_read_only(args)
    return None


def git_refused_flag(sub: str, args: Sequence[str]) -> str | None:
    """The first of a git subcommand's arguments that writes a file or runs a program (GIT_REFUSED_FLAGS, or
    GIT_SUBCOMMAND_REFUSED for ``sub``), else None."""
    flags = (*GIT_REFUSED_FLAGS, *GIT_SUBCOMMAND_REFUSED.get(sub, ()))
    letters = "".join(f[1] for f in GIT_SUBCOMMAND_REFUSED.get(sub, ()) if len(f) == 2)
    for word in args:
        name = word.partition("=")[0]
        if word.startswith(flags):
            return word
        if word.startswith("-") and not word.startswith("--") and any(c in word[1:] for c in letters):
            return word  # in a cluster (an attached value holding the letter counts too: erring strict)
        if name.startswith("--") and len(name) > 2 and any(f.startswith(name) for f in flags if f.startswith("--")):
            return word  # an abbreviation: git's option parser takes --outp=x as --output=x
    return None


def _verbose_status(word: str) -> bool:
    """status's -v (alone, doubled, in a cluster such as -sv) or --verbose (abbreviated too): it shows a diff,
    through the textconv program a repository's config names, and status has no --no-textconv."""
    if word.startswith("--"):
        return len(word) > 2 and "--verbose".startswith(word)
    return word.startswith("-") and "v" in word


def _git_read_only(args: list[str]) -> str | None:
    if not args or args[0] not in GIT_READ_ONLY:
        return None  # also refuses global options before the subcommand (-c, -C, --exec-path, ...)
    sub, rest = args[0], args[1:]
    if git_refused_flag(sub, rest) is not None:
        return None
    if sub == "status" and any(_verbose_status(a) for a in rest):
        return None
    if sub == "branch" and (
        ("--list" not in rest and "-l" not in rest)
        or not all(a in BRANCH_LIST_FLAGS or not a.startswith("-") for a in rest)
    ):
        return None
    config = [w for setting in GIT_NEUTRAL_CONFIG for w in ("-c", setting)]
    line = shlex.join(["--no-pager", *config, sub, *sorted(GIT_READ_ONLY[sub]), *rest])
    return f'{GIT_ENV}; {GIT_NO_FILTERS}git "$@" {line}'


# ---------------------------------------------------------------- git lines an allow rule runs


GIT_RULED_CONFIG: Final = (
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.hooksPath=/dev/null",
    "core.editor=false",
    "sequence.editor=false",
    "diff.external=",
    "protocol.ext.allow=never",
)
"""``git -c`` settings for every git line an allow rule runs: programs none of them needs are off (no terminal for a
pager or an editor; fsmonitor only saves time; hooks are the repository's; ``ext::`` runs what a URL says). Network,
filters and transport programs stay: ``git fetch`` and git-lfs must work (ADR 0066)."""
GIT_REPOSITORY_PROGRAMS: Final = {
    "filter.*.clean": "",
    "filter.*.smudge": "",
    "filter.*.process": "",
    "diff.*.textconv": "",
    "diff.*.command": "",
    "merge.*.driver": "",
    "alias.*": "",
    "gpg.program": NO_PROGRAM,
    "gpg.*.program": NO_PROGRAM,
    "gpg.ssh.defaultkeycommand": NO_PROGRAM,
    "core.sshcommand": "ssh",
    "core.askpass": "",
    "core.alternaterefscommand": "true",
    "credential.helper": "",
    "credential.*.helper": "",
    "interactive.difffilter": "",
    "trailer.*.cmd": "",
    "trailer.*.command": "",
    "submodule.*.update": "checkout",
    "remote.*.uploadpack": None,
    "remote.*.receivepack": None,
}
"""Program keys (``*``: any subsection) that, set by the repository's own config (scope local or worktree, its
includes too), are overridden for a rule-allowed git line, and the value they get: git's default, or a no-op (an
empty filter is none, so a ``required`` one then fails; an empty diff or merge driver or alias fails; an empty
credential helper empties the list). The same key set in your config (global, system) runs: your git-lfs, ssh
command and credential helper work. None: git takes the key's first value, so ``-c`` cannot override it and the
line stops. ``core.gitProxy`` takes its first value too; an empty ``GIT_PROXY_COMMAND`` comes before all of them."""


def _glob_regex(glob: str) -> str:
    """A key glob of GIT_REPOSITORY_PROGRAMS as the POSIX regular expression ``git config --get-regexp`` takes."""
    return re.escape(glob).replace(r"\*", ".+")


def _repository_programs(git: str) -> str:
    """Shell that puts ``-c KEY=VALUE`` in ``"$@"`` for each program key the repository's own config sets. A git
    that cannot say a key's scope (``--show-scope``: 2.26) or a key that ``-c`` cannot name (a subsection with
    ``=``) stops the line: nothing runs unneutralised."""
    keys = "|".join(_glob_regex(glob) for glob in [*GIT_REPOSITORY_PROGRAMS, "core.gitproxy"])
    stuck = (
        "not run: the repository's own config names a program ($k) that cannot be overridden; ask the user to run it"
    )
    cases = "".join(
        f'{glob}) echo "{stuck}" >&2; exit 2;; ' if value is None else f"{glob}) v={shlex.quote(value)};; "
        for glob, value in GIT_REPOSITORY_PROGRAMS.items()
    )
    stop = "not run: this git cannot tell which programs the repository's own config names; ask the user to run it"
    odd = "not run: the repository's config names a program under a key holding = ($k); ask the user to run it"
    return (
        f"set --; r=$({shlex.quote(git)} config --show-scope --name-only --get-regexp {shlex.quote(f'^({keys})$')}); "
        f'case $? in 0|1) ;; *) echo "{stop}" >&2; exit 2;; esac; '
        'while IFS= read -r l; do k="${l#*\t}"; case "$l" in "local\t"*|"worktree\t"*) ;; *) continue;; esac; '
        f'case "$k" in *=*) echo "{odd}" >&2; exit 2;; core.gitproxy) export GIT_PROXY_COMMAND=; continue;; '
        f'{cases}esac; set -- "$@" -c "$k=$v"; done <<EOF\n$r\nEOF\n'
    )


def ruled_git_line(command: str) -> str:
    """The line to run for ``command`` when an allow rule lets it through: for git, the same command with the
    programs a repository can name neutralised (GIT_RULED_CONFIG, GIT_REPOSITORY_PROGRAMS, and for log, diff and
    show ``--no-ext-diff --no-textconv``); any other line as it is."""
    words = command_words(command)
    if words is None or posixpath.basename(words[0]) != "git" or len(words) < 2 or words[1].startswith("-"):
        return command  # not a line a git allow rule covers (unscopable refuses it)
    git, sub, rest = words[0], words[1], words[2:]
    config = [w for setting in GIT_RULED_CONFIG for w in ("-c", setting)]
    line = shlex.join(["--no-pager", *config, sub, *sorted(GIT_READ_ONLY.get(sub, ())), *rest])
    return f'{_repository_programs(git)}{shlex.quote(git)} "$@" {line}'
