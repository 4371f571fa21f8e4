"""Programs a repository's own config names, against the git lines DashFloat runs with no keypress: the read-only
allowlist's and the ones an allow rule lets through (ADR 0066). Real repositories, real git, real shells; each
attack is first shown to work on the plain command."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashfloat.permissions import (
    GIT_REFUSED_FLAGS,
    RuleError,
    command_scope,
    git_refused_flag,
    matches,
    no_scope_reason,
    parse_rule,
    read_only_command,
    ruled_git_line,
)
from dashfloat.protocol import ExecuteCommandArgs
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv
from tests.permissions import test_hostile_repo
from tests.permissions.test_hostile_repo import git, run

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

hostile = test_hostile_repo.hostile
"""Its fixture: a repository whose config names marker-writing fsmonitor, pager, diff and filter programs."""


def git_out(repo: Path, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", *args], cwd=repo, input=stdin, check=True, capture_output=True, text=True, env=env)
    return done.stdout.strip()


def program(markers: Path, name: str, then: str = "") -> Path:
    """An executable script beside ``markers`` that leaves ``markers/NAME`` when anything runs it, says so on stderr,
    then runs ``then``."""
    path = markers.parent / f"{name}.sh"
    path.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(markers / name))}\necho REPOSITORY-PROGRAM-RAN >&2\n{then}\n")
    path.chmod(0o755)
    return path


def repository(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with one commit, and an empty directory for markers."""
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir(parents=True)
    markers.mkdir()
    git(repo, "init", "-q", "-b", "main", ".")
    git(repo, "config", "user.email", "a@example.com")
    git(repo, "config", "user.name", "a")
    (repo / "a").write_text("one\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    return repo, markers


def marked(markers: Path) -> set[str]:
    return {p.name for p in markers.iterdir()}


# ---------------------------------------------------------------- signatures: the program the header picks

SIGNATURES = {
    "openpgp": ("PGP SIGNATURE", "gpg.openpgp.program"),
    "x509": ("SIGNED MESSAGE", "gpg.x509.program"),
    "ssh": ("SSH SIGNATURE", "gpg.ssh.program"),
}
"""A signature format: the armour its ``gpgsig`` header starts with, and the key naming the program that checks it."""


def sign_head(repo: Path, markers: Path, kind: str) -> None:
    """HEAD becomes a commit whose ``gpgsig`` header holds a (fake) signature of ``kind``, and the repository's config
    names a marker-writing program for that format: git picks the program by the header, no key is needed."""
    label, key = SIGNATURES[kind]
    tree, parent = git_out(repo, "rev-parse", "HEAD^{tree}"), git_out(repo, "rev-parse", "HEAD")
    body = (
        f"tree {tree}\nparent {parent}\nauthor a <a@example.com> 1 +0000\ncommitter a <a@example.com> 1 +0000\n"
        f"gpgsig -----BEGIN {label}-----\n abc\n -----END {label}-----\n\nsigned\n"
    )
    git(repo, "update-ref", "HEAD", git_out(repo, "hash-object", "-t", "commit", "-w", "--stdin", stdin=body))
    git(repo, "config", key, str(program(markers, kind)))
    (repo / ".git" / "allowed_signers").touch()  # ssh verification needs the file to exist before it runs anything
    git(repo, "config", "gpg.ssh.allowedSignersFile", str(repo / ".git" / "allowed_signers"))


@pytest.fixture(params=list(SIGNATURES))
def signed(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Path, str]:
    repo, markers = repository(tmp_path)
    sign_head(repo, markers, request.param)
    return repo, markers, request.param


def test_the_plain_log_runs_the_repositorys_signature_program(signed: tuple[Path, Path, str]) -> None:
    repo, markers, kind = signed
    run(repo, "git log -1 --format=%GG")
    assert marked(markers) == {kind}  # the attack is real, for every format


SIGNATURE_LINES = [
    f"git {sub} --format={placeholder}"
    for sub in ("log -1", "show -s")
    for placeholder in ("%G?", "%GG", "%GS", "%GK", "%GF")  # %GT: git 2.39 aborts (a BUG) when the check fails
]


@pytest.mark.parametrize("line", SIGNATURE_LINES)
def test_read_only_and_rule_allowed_lines_run_no_signature_program(signed: tuple[Path, Path, str], line: str) -> None:
    repo, markers, _ = signed
    safe = read_only_command(line)
    assert safe is not None
    for runnable in (safe, ruled_git_line(line)):
        done = run(repo, runnable)
        assert done.returncode == 0, done.stderr
        assert marked(markers) == set() and "REPOSITORY-PROGRAM-RAN" not in done.stdout + done.stderr


# ---------------------------------------------------------------- other ways into the repository's config


def test_status_help_would_run_the_repositorys_man_viewer_so_it_asks(tmp_path: Path) -> None:
    repo, markers = repository(tmp_path)
    for key, value in [("help.format", "man"), ("man.viewer", "evil"), ("man.evil.cmd", f"touch {markers}/man")]:
        git(repo, "config", key, value)
    run(repo, "git status --help")
    assert marked(markers) == {"man"}  # the attack is real: git status --help is git help status
    for line in ("git status --help", "git status --hel"):
        assert read_only_command(line) is None
        assert not matches(parse_rule("execute_command(git status)", "allow"), "allow", cmd(line), "/w")


def test_verbose_status_would_run_the_repositorys_textconv_so_it_asks(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    git(repo, "add", "f.txt")  # a staged change: -v shows its diff, through the textconv of f.txt's driver
    run(repo, "git status -v")
    assert "textconv" in marked(markers)  # the attack is real
    for line in ("git status -v", "git status -vv", "git status -sv", "git status --verbose", "git status --verb"):
        assert read_only_command(line) is None, line


@pytest.mark.parametrize("line", ["git status -s", "git status -uno", "git status --porcelain=v2", "git status -sb"])
def test_other_status_lines_still_run_unasked(line: str) -> None:
    assert read_only_command(line) is not None


def test_a_lazy_fetch_runs_no_transport_even_where_the_repository_allows_ext(tmp_path: Path) -> None:
    """A partial clone fetches a missing object from its promisor remote; an ``ext::`` URL is a command. The
    repository's own ``protocol.ext.allow=always`` beats ``-c protocol.allow=never``: only GIT_ALLOW_PROTOCOL stops a
    git that lacks GIT_NO_LAZY_FETCH (before 2.39.4)."""
    repo, markers = repository(tmp_path)
    blob = git_out(repo, "rev-parse", "HEAD:a")
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    for key, value in [
        ("core.repositoryformatversion", "1"),
        ("extensions.partialClone", "origin"),
        ("remote.origin.promisor", "true"),
        ("remote.origin.url", f"ext::sh -c touch% {markers}/ext"),
        ("protocol.ext.allow", "always"),
    ]:
        git(repo, "config", key, value)
    run(repo, "git show HEAD:a")
    assert marked(markers) == {"ext"}  # the attack is real
    (markers / "ext").unlink()
    safe = read_only_command("git show HEAD:a")
    assert safe is not None and "GIT_NO_LAZY_FETCH=1 " in safe
    for line in (safe, safe.replace("GIT_NO_LAZY_FETCH=1 ", "")):  # this git, and one without the variable
        run(repo, line)
        assert marked(markers) == set()


# ---------------------------------------------------------------- flags an allow rule never covers


def cmd(line: str) -> ExecuteCommandArgs:
    return ExecuteCommandArgs(command=line)


REFUSED = [
    ("show", "--output=.git/config"),
    ("show", "--outp=.git/config"),
    ("diff", "--ext-diff"),
    ("diff", "--ext"),
    ("log", "--textconv"),
    ("log", "--textc"),
    ("show", "--show-signature"),
    ("grep", "-O"),
    ("grep", "-Ovi"),
    ("grep", "-nO./x.sh"),
    ("rebase", "-ix"),
    ("clone", "-qu"),
    ("archive", "-vo"),
    ("grep", "--open-files-in-pager=vi"),
    ("status", "--help"),
    ("fetch", "--upload-pack=x"),
    ("fetch", "--upload-p=x"),
    ("push", "--receive-pack=x"),
    ("push", "--exec=x"),
    ("rebase", "-x"),
    ("rebase", "--exec=make"),
    ("difftool", "-x"),
    ("difftool", "--extcmd=x"),
    ("clone", "-u"),
    ("clone", "-ccore.fsmonitor=x"),
    ("clone", "--config=core.fsmonitor=x"),
    ("clone", "--template=t"),
    ("init", "--template=t"),
    ("archive", "-o"),
    ("archive", "--out=x"),
]
"""(subcommand, word): each writes a file, runs a program or plants config or hooks."""
ADMITTED = [
    ("log", "--cc"),
    ("log", "--oneline"),
    ("log", "--stat"),
    ("log", "--"),
    ("log", "--show-notes"),
    ("diff", "--no-ext-diff"),
    ("diff", "--no-textconv"),
    ("diff", "--exit-code"),
    ("diff", "--relative"),
    ("checkout", "--ours"),
    ("cherry-pick", "-x"),
    ("log", "-Sfoo"),
    ("grep", "-no"),
    ("push", "-u"),
    ("commit", "-m"),
]
"""(subcommand, word): near misses that stay coverable (``-x`` and ``-u`` only refused where they run a program)."""


@pytest.mark.parametrize(("sub", "word"), REFUSED)
def test_an_allow_rule_never_covers_a_refused_git_flag(sub: str, word: str) -> None:
    line = f"git {sub} {word} x"
    assert git_refused_flag(sub, [word, "x"]) == word
    assert not matches(parse_rule(f"execute_command(git {sub})", "allow"), "allow", cmd(line), "/w")
    assert command_scope(line) is None  # no "always" offered, and the key line says why
    assert no_scope_reason(cmd(line)) == f"git's {word} writes a file or runs a program a repository's config can name"
    with pytest.raises(RuleError, match="cannot be allowed: git's"):
        parse_rule(f"execute_command(git {sub} {word})", "allow")


@pytest.mark.parametrize(("sub", "word"), ADMITTED)
def test_near_misses_stay_covered(sub: str, word: str) -> None:
    assert git_refused_flag(sub, [word]) is None
    assert matches(parse_rule(f"execute_command(git {sub})", "allow"), "allow", cmd(f"git {sub} {word} x"), "/w")


def test_a_pager_named_in_a_grep_cluster_would_run_so_no_rule_covers_it(tmp_path: Path) -> None:
    repo, markers = repository(tmp_path)
    program(markers, "pager")
    line = f"git grep -nO{markers.parent}/pager.sh one"
    run(repo, line)
    assert marked(markers) == {"pager"}  # the attack is real: -O in a cluster opens the matches in ./pager.sh
    assert not matches(parse_rule("execute_command(git grep)", "allow"), "allow", cmd(line), "/w")


LONG_REFUSED = [f for f in GIT_REFUSED_FLAGS if f.startswith("--")]


@given(
    flag=st.sampled_from(GIT_REFUSED_FLAGS),
    sub=st.sampled_from(["show", "log", "diff", "status", "add", "commit", "fetch", "push", "grep"]),
    value=st.text(alphabet="abcxyz./_-", max_size=8),
    attached=st.booleans(),
)
def test_a_refused_flag_with_any_value_attached_is_never_covered(
    flag: str, sub: str, value: str, attached: bool
) -> None:
    word = f"{flag}={value}" if attached and flag.startswith("--") else f"{flag}{value}" if attached else flag
    rule = parse_rule(f"execute_command(git {sub})", "allow")
    assert not matches(rule, "allow", cmd(shlex.join(["git", sub, "a", word])), "/w")
    assert read_only_command(shlex.join(["git", sub, word])) is None


@given(flag=st.sampled_from(LONG_REFUSED), data=st.data())
def test_every_abbreviation_of_a_refused_long_flag_is_refused(flag: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=3, max_value=len(flag)))
    assert git_refused_flag("log", [flag[:cut] + "=x"]) is not None


# ---------------------------------------------------------------- git lines an allow rule lets through


def test_a_line_that_is_not_a_git_subcommand_runs_as_written() -> None:
    for line in ("npm test", "make -j4", "git", "git -c a=b log", "cat a | git log"):
        assert ruled_git_line(line) == line


def test_a_rule_allowed_add_runs_no_filter_and_diff_and_log_no_diff_program(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    run(repo, "git add f.txt && git diff --cached && git log -p")  # the attack is real for the plain lines
    assert {"clean", "textconv", "diffcmd", "fsmonitor"} <= marked(markers)
    git(repo, "reset", "-q")
    for p in markers.iterdir():
        p.unlink()
    for line in ("git add f.txt", "git diff --cached", "git log -p", "git show", "git status -v", "git blame f.txt"):
        done = run(repo, ruled_git_line(line))
        assert marked(markers) == set(), (line, done.stderr)
    assert git_out(repo, "show", ":f.txt") == "one\ntwo"  # added, unfiltered


def test_hooks_editors_aliases_and_merge_drivers_of_the_repository_do_not_run(tmp_path: Path) -> None:
    repo, markers = repository(tmp_path)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {markers}/hook\n")
    hook.chmod(0o755)
    (repo / ".gitattributes").write_text("*.m merge=evil\n")
    (repo / "x.m").write_text("base\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "x.m").write_text("other\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "x.m").write_text("main\n")
    for key, value in [
        ("core.editor", str(program(markers, "editor"))),
        ("alias.lg", f"!touch {markers}/alias"),
        ("merge.evil.driver", f"touch {markers}/merge; false"),
        ("trailer.sign.cmd", f"touch {markers}/trailer; echo x"),
    ]:
        git(repo, "config", key, value)
    run(repo, "git lg && git commit -q --allow-empty -m t --trailer sign:x")
    assert marked(markers) == {"alias", "hook", "trailer"}  # the attacks are real
    for p in markers.iterdir():
        p.unlink()

    done = run(repo, ruled_git_line("git commit -q -am main"))
    assert done.returncode == 0 and git_out(repo, "log", "-1", "--format=%s") == "main"  # committed, hook not run
    done = run(repo, ruled_git_line("git commit -q --allow-empty -m t --trailer sign:x"))
    assert done.returncode == 0 and "running trailer command '' failed" in done.stderr
    done = run(repo, ruled_git_line("git commit --allow-empty"))
    assert done.returncode != 0 and "problem with the editor 'false'" in done.stderr  # it says what to do (-m)
    done = run(repo, ruled_git_line("git lg"))
    assert done.returncode != 0 and "expansion of alias 'lg' failed" in done.stderr
    done = run(repo, ruled_git_line("git merge other"))
    assert done.returncode != 0
    assert marked(markers) == set()


def run_as_user(repo: Path, line: str, user_config: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``line`` in a shell, with ``user_config`` as the user's own git config (global scope)."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(user_config), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(
        ["sh", "-c", line], cwd=repo, input=stdin, capture_output=True, text=True, env=env, timeout=60
    )


def test_your_filter_runs_the_repositorys_does_not_and_a_required_one_it_overrides_fails(tmp_path: Path) -> None:
    """git-lfs is installed in the user's config: a rule-allowed ``git add`` must still run it."""
    repo, markers = repository(tmp_path)
    user = tmp_path / "gitconfig"
    user.write_text('[filter "lfs"]\n\tclean = tr a-z A-Z\n\trequired = true\n')
    (repo / ".gitattributes").write_text("*.bin filter=lfs\n")
    (repo / "big.bin").write_text("payload\n")
    done = run_as_user(repo, ruled_git_line("git add big.bin"), user)
    assert done.returncode == 0, done.stderr
    assert git_out(repo, "show", ":big.bin") == "PAYLOAD"  # your filter ran
    git(repo, "config", "filter.lfs.clean", f"touch {markers}/clean; cat")  # the repository's, over yours
    (repo / "big.bin").write_text("changed\n")
    run_as_user(repo, "git add big.bin", user)
    assert marked(markers) == {"clean"}  # the attack is real
    (markers / "clean").unlink()
    done = run_as_user(repo, ruled_git_line("git add big.bin"), user)
    assert done.returncode != 0 and "clean filter 'lfs' failed" in done.stderr  # nothing unfiltered is stored
    assert marked(markers) == set()


def test_fetch_uses_the_network_and_your_transport_but_not_the_repositorys_programs(tmp_path: Path) -> None:
    repo, markers = repository(tmp_path)
    source, _ = repository(tmp_path / "source")
    for key, value in [
        ("remote.origin.url", str(source)),
        ("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
        ("remote.evil.url", f"ext::sh -c touch% {markers}/ext"),
        ("protocol.ext.allow", "always"),
        ("remote.ssh.url", "ssh://127.0.0.1:9/x"),  # port 9: refused at once, no name to look up
        ("core.sshCommand", str(program(markers, "ssh"))),
        ("remote.proxied.url", "git://127.0.0.1:9/x"),
        ("core.gitProxy", str(program(markers, "proxy"))),
        ("credential.helper", f"!touch {markers}/credential; :"),
    ]:
        git(repo, "config", key, value)
    user = tmp_path / "gitconfig"
    user.write_text("")
    lines = ["git fetch -q evil", "git fetch -q ssh", "git fetch -q proxied"]
    asked = "protocol=https\nhost=example.com\n\n"
    for line in lines:
        run_as_user(repo, line, user)
    run_as_user(repo, "git credential fill", user, stdin=asked)
    assert marked(markers) == {"ext", "ssh", "proxy", "credential"}  # the attacks are real
    for p in markers.iterdir():
        p.unlink()

    done = run_as_user(repo, ruled_git_line("git fetch -q origin"), user)
    assert done.returncode == 0, done.stderr
    assert git_out(repo, "rev-parse", "origin/main") == git_out(source, "rev-parse", "main")  # the fetch worked
    for line in lines:
        run_as_user(repo, ruled_git_line(line), user)
    run_as_user(repo, ruled_git_line("git credential fill"), user, stdin=asked)
    assert marked(markers) == set()
    user.write_text(f"[core]\n\tsshCommand = {program(markers, 'your-ssh')}\n")
    git(repo, "config", "--unset", "core.sshCommand")
    run_as_user(repo, ruled_git_line("git fetch -q ssh"), user)
    assert marked(markers) == {"your-ssh"}  # your own ssh command still runs


@pytest.mark.parametrize("key", ["uploadpack", "receivepack"])
def test_a_remote_program_the_command_line_cannot_override_stops_the_line(tmp_path: Path, key: str) -> None:
    """git takes a remote's first uploadpack or receivepack, so ``-c`` cannot replace the repository's."""
    repo, markers = repository(tmp_path)
    source, _ = repository(tmp_path / "source")
    git(repo, "config", "remote.origin.url", str(source))
    git(repo, "config", f"remote.origin.{key}", str(program(markers, key, then=f'exec git-{key[:-4]}-pack "$@"')))
    run(repo, "git fetch -q origin" if key == "uploadpack" else "git push -q origin HEAD:refs/heads/pushed")
    assert marked(markers) == {key}  # the attack is real
    (markers / key).unlink()
    done = run(repo, ruled_git_line("git fetch -q origin"))
    assert done.returncode == 2 and done.stderr.strip() == (
        f"not run: the repository's own config names a program (remote.origin.{key}) that cannot be overridden; "
        "ask the user to run it"
    )
    assert marked(markers) == set()


def test_a_program_key_git_cannot_name_or_a_git_that_cannot_say_scopes_stops_the_line(tmp_path: Path) -> None:
    repo, markers = repository(tmp_path)
    with open(repo / ".git" / "config", "a") as config:
        config.write(f'[filter "a=b"]\n\tclean = "touch {markers}/eq; cat"\n')
    (repo / ".gitattributes").write_text("a filter=a=b\n")
    (repo / "a").write_text("two\n")
    done = run(repo, ruled_git_line("git add a"))
    assert done.returncode == 2 and "key holding = (filter.a=b.clean); ask the user to run it" in done.stderr
    old = tmp_path / "old" / "git"  # a git before 2.26: no --show-scope
    old.parent.mkdir()
    old.write_text(f'#!/bin/sh\ncase "$*" in *--show-scope*) exit 129;; esac\ntouch {markers}/ran\n')
    old.chmod(0o755)
    done = run(repo, ruled_git_line(f"{old} add a"))
    assert done.returncode == 2 and "cannot tell which programs" in done.stderr
    assert marked(markers) == set()


# ---------------------------------------------------------------- a real agent turn


def headless(server: ScriptedServer, tree: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dashfloat_argv(server, tree, *args), env=env, capture_output=True, text=True, timeout=60)


def tmp_rules(env: dict[str, str], allow: list[str]) -> Path:
    """The user's rule file in the isolated environment, allowing ``allow``."""
    path = Path(env["XDG_CONFIG_HOME"]) / "dashfloat" / "permissions.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"allow = {json.dumps(allow)}\n")
    return path


def test_a_turn_the_repository_cannot_turn_into_its_programs(tree: Path, isolated_env: dict[str, str]) -> None:
    """Saved rules allow ``git add`` and ``git show``; the model adds a file, rewrites .git/config through
    ``--output`` and reads a commit's x509 signature. Markers go inside the workspace, where a command may write."""
    markers = tree / "markers"
    markers.mkdir()
    git(tree, "init", "-q", "-b", "main", ".")
    git(tree, "config", "user.email", "a@example.com")
    git(tree, "config", "user.name", "a")
    git(tree, "add", "a.txt")
    git(tree, "commit", "-q", "-m", "init")
    sign_head(tree, markers, "x509")
    (tree / ".gitattributes").write_text("*.txt filter=evil\n")
    git(tree, "config", "filter.evil.clean", f"touch {markers}/clean; cat")
    (tree / "a.txt").write_text("hello again\n")
    config_before = (tree / ".git" / "config").read_text()
    tmp_rules(isolated_env, ["execute_command(git add)", "execute_command(git show)"])
    calls = [
        ("c1", "execute_command", {"command": "git add a.txt"}),
        ("c2", "execute_command", {"command": "git show --output=.git/config --format=[core]%n%x09pager=x HEAD"}),
        ("c3", "execute_command", {"command": "git log -1 --format=%GG"}),
    ]
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply(calls), text_reply("done"))
        done = headless(server, tree, isolated_env, "--json", "-p", "stage it")
    assert done.returncode == 4, done.stderr  # a mutation refused with nobody to ask (ADR 0074)
    results = {e["id"]: e for e in map(json.loads, done.stdout.splitlines()) if e["type"] == "tool_result_shown"}
    seen = {i: (r["status"], "REPOSITORY-PROGRAM-RAN" in r.get("output", "")) for i, r in results.items()}
    # c1 ran by the rule; c2 asked (headless asks nobody); c3 ran unasked, and the repository's program did not
    assert seen == {"c1": ("ok", False), "c2": ("rejected", False), "c3": ("ok", False)}, results
    assert git_out(tree, "diff", "--cached", "--name-only") == "a.txt"  # the rule's git add did its job
    assert (tree / ".git" / "config").read_text() == config_before
    assert marked(markers) == set()
