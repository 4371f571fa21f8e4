"""Which command lines would write .git's config, hooks or info, read-only in the ``workspace-write`` sandbox
(``_git_meta``): what a confirmation says of them."""

from __future__ import annotations

import os
import shlex
from typing import Final

from dashfloat.protocol import SandboxState

GIT_METADATA_NOTE: Final = (
    "{what} changes .git/config, .git/hooks or .git/info, which are read-only in this sandbox (programs named there "
    "would run at your next git command, outside it): that part will fail. If it should happen, run it yourself "
    "outside DashFloat, or start DashFloat with --sandbox off."
)
"""What a confirmation adds for a command ``git_metadata_writer`` names, in ``workspace-write``."""

_GIT_OPTIONS_WITH_VALUE: Final = frozenset(
    ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path", "--super-prefix")
)
_GIT_CONFIG_ELSEWHERE: Final = frozenset(("--global", "--system", "--file", "-f", "--blob"))
_GIT_CONFIG_WRITES: Final = frozenset(
    ("--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit")
)
_GIT_CONFIG_READS: Final = frozenset(
    ("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool", "-l", "--list")
)
_GIT_CONFIG_VALUED: Final = frozenset(("--type", "--default", "--comment", "--file", "-f", "--blob", "--value"))
_GIT_ACTIONS: Final = {
    "remote": frozenset(("add", "set-url", "rename", "remove", "rm", "set-branches")),
    "submodule": frozenset(("add", "init", "update", "sync", "deinit", "set-branch", "set-url", "absorbgitdirs")),
    "lfs": frozenset(("install", "uninstall", "update")),
    "flow": frozenset(("init",)),
    "sparse-checkout": frozenset(("init", "set", "add", "reapply", "disable")),
    "maintenance": frozenset(("register", "unregister", "start", "stop")),
}
"""git subcommands whose first word after them names an action that writes the repository's config or hooks."""
_GIT_FLAGS: Final = {
    "branch": frozenset(("-u", "--set-upstream-to", "--unset-upstream", "-t", "--track", "-m", "-M", "--move"))
    | frozenset(("-c", "-C", "--copy", "--edit-description")),
    "checkout": frozenset(("-t", "--track")),
    "switch": frozenset(("-t", "--track")),
    "push": frozenset(("-u", "--set-upstream")),
    "secrets": frozenset(("--install",)),
}
"""git subcommands with a flag that writes the config (upstream tracking, a renamed branch's section) or hooks."""
_HOOK_INSTALLERS: Final = {
    "pre-commit": frozenset(("install", "uninstall")),
    "lefthook": frozenset(("install", "uninstall", "add")),
    "overcommit": frozenset(("--install", "--uninstall")),
    "dvc": frozenset(("install",)),
    "git-lfs": frozenset(("install", "uninstall", "update")),
    "husky": frozenset(("", "install", "init")),
}
"""Other programs that install git hooks (or set ``core.hooksPath``): the action that does it (``""``: none given)."""
_RUNNERS: Final = frozenset(("sudo", "env", "command", "exec", "time", "nohup", "nice", "npx", "bunx", "pnpx"))
_PACKAGE_RUNS: Final = frozenset(("exec", "dlx", "x", "run"))
_SEPARATORS: Final = frozenset((";", "&&", "||", "|", "&", "(", ")", "|&", ";;"))


def _simple_commands(command: str) -> list[list[str]]:
    """The words of each simple command in a shell line (split at ``;``, ``&&``, ``|``, newlines, …)."""
    try:
        lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:  # an unclosed quote: the words as they come
        words = command.replace("\n", " ; ").split()
    commands: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(word)
    return [words for words in commands if words]


def _program(words: list[str]) -> list[str]:
    """The words from the program on: assignments (``A=b``), runners (``sudo``, ``env``, ``npx``) and their options
    dropped, and ``npm exec``/``pnpm dlx``/``yarn`` before a hook installer."""
    while words:
        first = os.path.basename(words[0])
        if "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
            words = words[1:]
        elif first in _RUNNERS:
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[1:]
        elif first in ("npm", "pnpm", "yarn", "bun") and len(words) > 1 and words[1] in _PACKAGE_RUNS:
            words = words[2:]
        elif first in ("yarn", "pnpm") and len(words) > 1 and words[1] in _HOOK_INSTALLERS:
            words = words[1:]
        else:
            return [first, *words[1:]]
    return []


def _git_config_writes(args: list[str]) -> bool:
    """Whether ``git config ARGS`` writes the repository's own config (not ``--global`` or another file's)."""
    if _GIT_CONFIG_ELSEWHERE & set(args):
        return False
    if _GIT_CONFIG_WRITES & {a.split("=", 1)[0] for a in args}:
        return True
    if _GIT_CONFIG_READS & set(args):
        return False
    positional: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _GIT_CONFIG_VALUED:
            skip = True
        elif not arg.startswith("-"):
            positional.append(arg)
    if positional and positional[0] in ("set", "unset", "rename-section", "remove-section", "edit"):
        return True
    if positional and positional[0] in ("get", "list"):
        return False
    return len(positional) >= 2  # ``git config key value``; one word only reads it


def _git_writer(args: list[str], in_repository: bool) -> str:
    """What of ``git ARGS`` writes .git's config, hooks or info (``"git remote add"``), or ``""``."""
    while args and args[0].startswith("-"):
        args = args[2:] if args[0] in _GIT_OPTIONS_WITH_VALUE else args[1:]
    if not args:
        return ""
    sub, rest = args[0], args[1:]
    action = next((word for word in rest if not word.startswith("-")), "")
    flags = {word.split("=", 1)[0] for word in rest if word.startswith("-")}
    if sub == "config":
        return "git config" if _git_config_writes(rest) else ""
    if sub == "init":
        return "git init in an existing repository" if in_repository else ""
    if action in _GIT_ACTIONS.get(sub, ()):
        return f"git {sub} {action}"
    said = sorted(_GIT_FLAGS.get(sub, frozenset()) & flags)
    return f"git {sub} {said[0]}" if said else ""


def git_metadata_writer(command: str, in_repository: bool = True) -> str:
    """The first part of a command line that would write .git's config, hooks or info (``git remote add``,
    ``git config``, ``pre-commit install``, ``husky``), read-only in the ``workspace-write`` sandbox; ``""`` when none
    would. ``in_repository``: whether the command runs inside a repository (``git init`` there rewrites its config)."""
    for words in _simple_commands(command):
        program = _program(words)
        if not program:
            continue
        name, args = program[0], program[1:]
        if name == "git":
            found = _git_writer(args, in_repository)
        else:
            action = next((word for word in args if word in _HOOK_INSTALLERS.get(name, ())), "")
            bare = "" in _HOOK_INSTALLERS.get(name, ()) and not any(not a.startswith("-") for a in args)
            found = f"{name} {action}".strip() if action or bare else ""
        if found:
            return found
    return ""


def git_metadata_note(command: str, state: SandboxState, root: str, cwd: str) -> str:
    """What a confirmation says of a command that would write .git's config, hooks or info in a ``workspace-write``
    session (``GIT_METADATA_NOTE``), else ``""``. ``cwd`` (inside ``root``): where it runs, to tell a ``git init``
    that makes a repository from one that rewrites one."""
    if state.mode != "workspace-write":
        return ""
    rel = os.path.relpath(cwd, root)
    parts = [] if rel == "." or rel.startswith("..") else rel.split("/")
    in_repository = any(os.path.lexists(os.path.join(root, *parts[:depth], ".git")) for depth in range(len(parts) + 1))
    what = git_metadata_writer(command, in_repository)
    return GIT_METADATA_NOTE.format(what=f"`{what}`") if what else ""
