"""The git metadata in the workspace is read-only in the sandbox (ADR 0067): real git, real bwrap, real trees.

Before, an approved command could write ``.git/hooks/pre-commit`` or ``core.fsmonitor`` into ``.git/config``, and the
user's next git command ran it outside any sandbox. Each attack below runs in the sandbox; the host tree's git metadata
must be what it was, while ``git add`` and ``git commit`` still work.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashfloat.executor import _git_meta, detect_sandbox, preview
from dashfloat.executor._git_meta import GIT_CONFIG_SCAN_MAX_BYTES, GITFILE_MAX_BYTES, GitBinds
from dashfloat.executor._git_writers import GIT_METADATA_NOTE, git_metadata_note, git_metadata_writer
from dashfloat.executor._sandbox import Sandbox, describe
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import SandboxPolicy
from tests.executor.conftest import run_json

TIMEOUT_S = 60.0
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00", "HOME": "/nonexistent"}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def make_repo(path: Path, *init: str) -> Path:
    """A repository with one commit at ``path``; its git directory is returned."""
    path.mkdir(exist_ok=True)
    git(path, "init", "-q", *init)
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "T")
    (path / "a.txt").write_text("a\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-qm", "first")
    return Path(git(path, "rev-parse", "--absolute-git-dir").strip())


def snapshot(*places: Path) -> dict[str, str]:
    """Every file, folder and link at and below ``places``, with its content or target."""
    found: dict[str, str] = {}
    for place in places:
        paths = [place, *sorted(place.rglob("*"))] if place.is_dir() and not place.is_symlink() else [place]
        for path in paths:
            if path.is_symlink():
                found[str(path)] = f"link {os.readlink(path)}"
            elif path.is_dir():
                found[str(path)] = "dir"
            elif path.is_file():
                found[str(path)] = path.read_bytes().decode(errors="replace")
            elif path.exists():
                found[str(path)] = "other"  # a fifo: never opened
    return found


def metadata(git_dir: Path) -> dict[str, str]:
    """What of a git directory runs or names programs: hooks, info, config and the pointers."""
    names = ("hooks", "info", "config", "config.worktree", "commondir", "modules", "worktrees")
    return {"type": "dir" if git_dir.is_dir() else "gone", **snapshot(*(git_dir / n for n in names))}


@pytest.fixture
def sandbox() -> Sandbox:
    return Sandbox.for_session(detect_sandbox("workspace-write", False, [], os.environ), os.environ)


@pytest.fixture
def repo(root: Path) -> Path:
    make_repo(root)
    return root


@pytest.fixture
def fixed(root: Path) -> Iterator[Root]:
    r = Root(str(root))
    yield r
    r.close()


def run(r: Root, command: str, sandbox: Sandbox, cwd: str = ".", **policy: Any) -> dict[str, Any]:
    args = {"command": command, "cwd": cwd}
    return run_json("execute_command", args, r, TIMEOUT_S, None, sandbox, SandboxPolicy(**policy))


def ran(result: dict[str, Any]) -> bool:
    """Whether the command ran (its exit status is its own business): the sandbox started."""
    return "exit_code" in result and "error" not in result


def test_git_add_and_commit_work_in_the_sandbox(repo: Path, fixed: Root, sandbox: Sandbox) -> None:
    (repo / "b.txt").write_text("b\n")
    commit = "git -c user.name=T -c user.email=t@x commit -q"
    command = (
        f"git add b.txt && {commit} -m second && git checkout -qb side && echo c > c.txt && git add c.txt && "
        f"{commit} -m third && git checkout -q - && git merge -q --ff-only side && git tag v1 && git gc -q && "
        "git stash list"
    )
    result = run(fixed, command, sandbox)
    assert result["ok"] and result["exit_code"] == 0, result
    assert git(repo, "log", "--format=%s").split() == ["third", "second", "first"]
    assert git(repo, "tag").split() == ["v1"]


ATTACKS = {
    "hook": "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
    "config": "printf '[core]\\n\\tfsmonitor = touch PWNED\\n' >> .git/config",
    "attributes": "echo '* diff=evil' > .git/info/attributes",
    "rename .git": "mv .git .git2 && mkdir -p .git/hooks",
    "remove hooks": "rm -rf .git/hooks; mkdir .git/hooks; echo x > .git/hooks/pre-commit",
    "rename hooks": "mv .git/hooks .git/hooks.old; mkdir .git/hooks && echo x > .git/hooks/pre-commit",
    "replace config": "rm -f .git/config; mv -f .git/HEAD .git/config",
    "git config": "git config x.y z; git config core.hooksPath evil; git config --unset core.bare",
    "link over hooks": "mkdir evil && echo x > evil/pre-commit; rm -rf .git/hooks; ln -s ../evil .git/hooks",
    "hard link": "ln .git/config cfg; echo '[core]' >> cfg; ln .git/hooks/pre-commit.sample h; echo x >> h",
    "reinit": "mkdir -p /tmp/t/hooks && echo x > /tmp/t/hooks/post-checkout && git init -q --template=/tmp/t",
    # git takes hooks and config from where a commondir points: nothing can stop its creation, so it is removed after
    "commondir": "mkdir -p evil/hooks && printf '[core]\\n\\tfsmonitor = touch PWNED\\n' > evil/config && "
    "echo x > evil/hooks/pre-commit && echo ../evil > .git/commondir",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_git_metadata_cannot_be_changed(repo: Path, fixed: Root, sandbox: Sandbox, attack: str) -> None:
    before = metadata(repo / ".git")
    result = run(fixed, ATTACKS[attack], sandbox)
    assert ran(result), result
    assert metadata(repo / ".git") == before
    assert not (repo / "PWNED").exists() and not (repo / ".git2").exists()
    assert git(repo, "log", "--format=%s").split() == ["first"]  # the repository still works on the host


def test_a_planted_commondir_is_removed_and_the_result_says_so(repo: Path, fixed: Root, sandbox: Sandbox) -> None:
    (repo / "evil" / "hooks").mkdir(parents=True)
    result = run(fixed, "echo ../evil > .git/commondir; echo written", sandbox)
    assert result["ok"], result
    assert not (repo / ".git" / "commondir").exists()
    assert result["output"].startswith("written\n") and "removed .git/commondir" in result["output"]
    assert git(repo, "log", "--format=%s").split() == ["first"]
    # A command that plants none gets no note.
    assert "commondir" not in run(fixed, "echo quiet", sandbox)["output"]


def test_missing_hooks_info_and_config_are_made_empty_and_stay_read_only(
    root: Path, fixed: Root, sandbox: Sandbox
) -> None:
    git_dir = make_repo(root, "--template=")
    assert not (git_dir / "hooks").exists() and not (git_dir / "info").exists()
    (git_dir / "config").unlink()  # git works without one; a command could make one naming a program
    command = (
        "mkdir -p .git/hooks .git/info; echo x > .git/hooks/pre-commit; echo x > .git/info/attributes; "
        "printf '[core]\\n\\tfsmonitor = touch PWNED\\n' > .git/config; git config x.y z"
    )
    result = run(fixed, command, sandbox)
    assert ran(result), result
    assert (git_dir / "hooks").is_dir() and list((git_dir / "hooks").iterdir()) == []
    assert (git_dir / "info").is_dir() and list((git_dir / "info").iterdir()) == []
    assert (git_dir / "config").read_text() == ""
    assert git(root, "log", "--format=%s").split() == ["first"]


@pytest.mark.parametrize("how", ["relative", "absolute"])
def test_a_dot_git_file_pointing_inside_protects_its_target(
    root: Path, fixed: Root, sandbox: Sandbox, how: str
) -> None:
    make_repo(root)
    os.rename(root / ".git", root / ".realgit")
    target = ".realgit" if how == "relative" else str(root / ".realgit")
    (root / ".git").write_text(f"gitdir: {target}\n")
    before = metadata(root / ".realgit") | snapshot(root / ".git")
    attack = (
        "echo x > .realgit/hooks/pre-commit; echo '[core]' >> .realgit/config; echo 'gitdir: evil' > .git; "
        "mv .realgit .other; git config x.y z"
    )
    assert ran(run(fixed, attack, sandbox))
    assert metadata(root / ".realgit") | snapshot(root / ".git") == before
    (root / "b.txt").write_text("b\n")
    result = run(fixed, "git add b.txt && git commit -qm second", sandbox)
    assert result["exit_code"] == 0, result
    assert git(root, "log", "--format=%s").split() == ["second", "first"]


def test_a_dot_git_link_inside_protects_its_target(root: Path, fixed: Root, sandbox: Sandbox) -> None:
    make_repo(root)
    os.rename(root / ".git", root / ".realgit")
    (root / ".git").symlink_to(".realgit")
    before = metadata(root / ".realgit")
    assert ran(run(fixed, "echo x > .git/hooks/pre-commit; echo x > .realgit/info/exclude; git config x.y z", sandbox))
    assert metadata(root / ".realgit") == before


def submodule(superproject: Path, source: Path, name: str) -> None:
    if not (source / ".git").exists():
        make_repo(source)
    git(superproject, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), name)
    git(superproject, "commit", "-qm", f"add {name}")


def test_submodules_git_directories_are_protected_and_still_commit(
    repo: Path, fixed: Root, sandbox: Sandbox, tmp_path: Path
) -> None:
    submodule(repo, tmp_path / "lib-src", "lib")
    submodule(repo, tmp_path / "json-src", "libs/json")  # a nested name: modules/libs/json
    modules = repo / ".git" / "modules"
    before = metadata(modules / "lib") | metadata(modules / "libs" / "json") | snapshot(repo / "lib" / ".git")
    attack = (
        "echo x > .git/modules/lib/hooks/pre-commit; git -C lib config x.y z; "
        "mv .git/modules/lib .git/modules/old; mv .git/modules/libs .git/modules/x; mv .git/modules .git/m; "
        "echo x > .git/modules/libs/json/hooks/post-checkout; echo 'gitdir: ../evil' > lib/.git"
    )
    assert ran(run(fixed, attack, sandbox))
    assert metadata(modules / "lib") | metadata(modules / "libs" / "json") | snapshot(repo / "lib" / ".git") == before
    result = run(fixed, "git -c user.name=T -c user.email=t@x commit -q --allow-empty -m in-lib", sandbox, cwd="lib")
    assert result["exit_code"] == 0, result
    assert git(repo / "lib", "log", "--format=%s").split()[0] == "in-lib"


def test_a_submodules_own_submodules_are_protected(repo: Path, fixed: Root, sandbox: Sandbox, tmp_path: Path) -> None:
    make_repo(tmp_path / "outer-src")
    submodule(tmp_path / "outer-src", tmp_path / "inner-src", "inner")
    submodule(repo, tmp_path / "outer-src", "outer")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init", "--recursive")
    inner = repo / ".git" / "modules" / "outer" / "modules" / "inner"
    assert (inner / "HEAD").exists()
    before = metadata(inner)
    assert ran(
        run(
            fixed,
            "echo x > hooks/pre-commit; mv ../inner ../x; git --git-dir=. config x.y z",
            sandbox,
            cwd=".git/modules/outer/modules/inner",
        )
    )
    assert metadata(inner) == before


def test_a_link_below_modules_makes_it_read_only_whole_with_what_it_leads_to(
    repo: Path, fixed: Root, sandbox: Sandbox, tmp_path: Path
) -> None:
    submodule(repo, tmp_path / "lib-src", "lib")
    modules = repo / ".git" / "modules"
    (repo / "vendored").mkdir()
    (repo / "vendored" / "config").write_text("[core]\n")
    (modules / "linked").symlink_to("../../vendored")
    (modules / "stray.txt").write_text("not a git directory\n")
    before = snapshot(modules, repo / "vendored")
    attack = "echo x > .git/modules/lib/hooks/pre-commit; echo x >> vendored/config; rm .git/modules/linked; echo ran"
    result = run(fixed, attack, sandbox)
    assert ran(result) and "ran" in result["output"], result
    assert snapshot(modules, repo / "vendored") == before


def test_past_the_walk_bound_modules_is_read_only_whole(
    repo: Path, fixed: Root, sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    submodule(repo, tmp_path / "a-src", "a")
    submodule(repo, tmp_path / "b-src", "b")
    modules = repo / ".git" / "modules"
    commit = "git -c user.name=T -c user.email=t@x commit -q --allow-empty -m inside"
    monkeypatch.setattr(_git_meta, "GIT_WALK_MAX", 3)  # modules/, a, b: each bound on its own
    assert run(fixed, commit, sandbox, cwd="b")["exit_code"] == 0
    monkeypatch.setattr(_git_meta, "GIT_WALK_MAX", 2)  # b is one too many: modules/ read-only whole
    before = metadata(modules / "a") | metadata(modules / "b") | snapshot(modules / "b" / "refs")
    result = run(fixed, f"echo x > .git/modules/b/hooks/pre-commit; cd b && {commit}", sandbox)
    assert result["exit_code"] != 0 and "Read-only file system" in result["output"], result
    assert metadata(modules / "a") | metadata(modules / "b") | snapshot(modules / "b" / "refs") == before
    (repo / "c.txt").write_text("c\n")
    assert run(fixed, f"git add c.txt && {commit}", sandbox)["exit_code"] == 0  # the superproject still commits


def test_linked_work_trees_pointers_are_read_only(repo: Path, fixed: Root, sandbox: Sandbox, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    admin = repo / ".git" / "worktrees" / "wt"
    git(repo, "config", "extensions.worktreeConfig", "true")
    (admin / "config.worktree").write_text("[core]\n\tsparseCheckout = false\n")
    before = metadata(repo / ".git") | snapshot(admin)
    attack = (
        "echo ../../../evil > .git/worktrees/wt/commondir; echo x >> .git/worktrees/wt/config.worktree; "
        "mv .git/worktrees/wt .git/worktrees/x; mv .git/worktrees .git/w; echo x > .git/config.worktree"
    )
    assert ran(run(fixed, attack, sandbox))
    assert metadata(repo / ".git") | snapshot(admin) == before | {str(repo / ".git" / "config.worktree"): ""}


def test_a_linked_work_tree_inside_protects_its_common_directory(root: Path, fixed: Root, sandbox: Sandbox) -> None:
    main = make_repo(root / "main")
    git(root / "main", "worktree", "add", "-q", str(root / "wt"))
    admin = main / "worktrees" / "wt"
    before = metadata(main) | snapshot(admin / "commondir", admin / "gitdir", root / "wt" / ".git")
    attack = (
        "echo ../../../evil > ../main/.git/worktrees/wt/commondir; echo x > ../main/.git/hooks/pre-commit; "
        "git config x.y z; echo 'gitdir: /elsewhere' > .git"
    )
    assert ran(run(fixed, attack, sandbox, cwd="wt"))
    assert metadata(main) | snapshot(admin / "commondir", admin / "gitdir", root / "wt" / ".git") == before
    result = run(fixed, "git -c user.name=T -c user.email=t@x commit -q --allow-empty -m in-wt", sandbox, cwd="wt")
    assert result["exit_code"] == 0, result
    assert git(root / "wt", "log", "--format=%s").split()[0] == "in-wt"


@pytest.mark.parametrize("pointer", ["outside", "empty", "dangling link", "not a folder"])
def test_a_dot_git_pointing_nowhere_inside_is_left_alone_and_the_command_runs(
    root: Path, fixed: Root, sandbox: Sandbox, pointer: str
) -> None:
    if pointer == "dangling link":
        (root / ".git").symlink_to("nowhere")
    elif pointer == "not a folder":
        (root / "file").write_text("x\n")
        (root / ".git").write_text("gitdir: file\n")
    else:
        (root / ".git").write_text("gitdir: " + (str(root.parent / "outside") if pointer == "outside" else "") + "\n")
    result = run(fixed, "echo ran; echo x > ../outside/secret.txt", sandbox)
    assert ran(result) and "ran" in result["output"], result
    assert (root.parent / "outside" / "secret.txt").read_text() == "secret\n"


# ---------------------------------------------------------------- odd entries: never followed out, never fatal


def odd_hooks(git_dir: Path, root: Path, kind: str) -> None:
    """Replace ``hooks`` by something odd (as a command run outside the sandbox, or the user, may have)."""
    (git_dir / "hooks").rename(git_dir / "hooks.old")
    if kind == "link inside":
        (root / "githooks").mkdir()
        (root / "githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
        (git_dir / "hooks").symlink_to("../githooks")
    elif kind == "absolute link inside":
        (root / "githooks").mkdir()
        (root / "githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
        (git_dir / "hooks").symlink_to(root / "githooks")
    elif kind == "link outside":
        (git_dir / "hooks").symlink_to("../../outside")
    elif kind == "absolute link outside":
        (git_dir / "hooks").symlink_to("/")
    elif kind == "dangling link":
        (git_dir / "hooks").symlink_to("nowhere")
    elif kind == "link loop":
        (git_dir / "hooks").symlink_to("hooks")
    elif kind == "file":
        (git_dir / "hooks").write_text("not a folder\n")
    elif kind == "fifo":
        os.mkfifo(git_dir / "hooks")


@pytest.mark.parametrize(
    "kind",
    [
        "link inside",
        "absolute link inside",
        "link outside",
        "absolute link outside",
        "dangling link",
        "link loop",
        "file",
        "fifo",
    ],
)
def test_an_odd_hooks_entry_makes_that_git_directory_read_only_and_never_fails_a_command(
    repo: Path, fixed: Root, sandbox: Sandbox, kind: str
) -> None:
    git_dir = repo / ".git"
    odd_hooks(git_dir, repo, kind)
    places = [git_dir, repo.parent / "outside", *([repo / "githooks"] if "inside" in kind else [])]
    before = snapshot(*places)
    attack = (
        "echo x > githooks/pre-commit; echo x > .git/hooks/pre-commit; echo x > ../outside/secret.txt; "
        "rm -f .git/hooks; mkdir .git/hooks; echo '[core]' >> .git/config; echo ran"
    )
    for _ in range(2):  # and the next command too
        result = run(fixed, attack, sandbox)
        assert ran(result) and "ran" in result["output"], result
    assert snapshot(*places) == before


@pytest.mark.parametrize("name", ["config", "info", "config.worktree", "modules", "commondir"])
def test_an_odd_entry_is_handled_like_hooks(repo: Path, fixed: Root, sandbox: Sandbox, name: str) -> None:
    git_dir = repo / ".git"
    (repo / "elsewhere").mkdir()
    if (git_dir / name).exists():
        os.rename(git_dir / name, repo / "elsewhere" / name)
    else:
        (repo / "elsewhere" / name).mkdir()
    (git_dir / name).symlink_to(f"../elsewhere/{name}")
    before = snapshot(git_dir, repo / "elsewhere")
    result = run(fixed, f"echo x >> elsewhere/{name}/exclude; echo x >> elsewhere/{name}; echo ran", sandbox)
    assert ran(result) and "ran" in result["output"], result
    assert snapshot(git_dir, repo / "elsewhere") == before


def test_a_dot_git_file_too_large_for_git_points_nowhere(root: Path, fixed: Root, sandbox: Sandbox) -> None:
    (root / ".git").write_text("gitdir: " + "x" * GITFILE_MAX_BYTES)
    result = run(fixed, "echo x > .git; echo ran", sandbox)
    assert ran(result) and "ran" in result["output"] and "Read-only" in result["output"]


def test_a_git_directory_in_the_folder_the_command_runs_in_is_protected(
    root: Path, fixed: Root, sandbox: Sandbox
) -> None:
    git_dir = make_repo(root / "inner")
    before = metadata(git_dir)
    assert ran(run(fixed, "echo x > .git/hooks/pre-commit; git config x.y z", sandbox, cwd="inner"))
    assert metadata(git_dir) == before


def test_nothing_is_made_in_read_only_mode_or_outside_a_repository(root: Path, fixed: Root, sandbox: Sandbox) -> None:
    git_dir = make_repo(root, "--template=")
    run(fixed, "true", sandbox, mode="read-only")
    assert not (git_dir / "hooks").exists() and not (git_dir / "info").exists()
    (root / "plain" / ".git").mkdir(parents=True)  # a .git folder without HEAD is no repository
    run(fixed, "true", sandbox, cwd="plain")
    assert list((root / "plain" / ".git").iterdir()) == []


def open_fds() -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
    return found


def test_no_descriptor_is_left_open_here_or_reaches_the_command(repo: Path, fixed: Root, sandbox: Sandbox) -> None:
    before = open_fds()
    result = run(fixed, "ls -l /proc/self/fd", sandbox)
    assert ".git" not in result["output"] and len(result["output"].splitlines()) == 5, result["output"]
    assert open_fds() == before


def test_the_binds_put_a_folder_before_what_is_in_it(repo: Path, fixed: Root) -> None:
    binds = GitBinds(fixed.fd, fixed.path, fixed.path)
    try:
        places = binds.args[2::3]
        assert places == sorted(places, key=lambda p: p.split("/"))
        assert places[0] == str(repo / ".git") and binds.args[0] == "--bind-fd"
        assert {p.rpartition("/")[2] for p in places[1:]} == {"hooks", "info", "config"}
        assert set(binds.args[0::3][1:]) == {"--ro-bind-fd"}
    finally:
        for fd in binds.fds:
            os.close(fd)


@pytest.mark.parametrize("over", [False, True])
def test_a_config_too_large_to_scan_is_taken_to_turn_on_per_work_tree_config(
    repo: Path, fixed: Root, over: bool
) -> None:
    config = repo / ".git" / "config"
    padding = GIT_CONFIG_SCAN_MAX_BYTES - config.stat().st_size + (1 if over else 0)
    with config.open("a") as file:
        file.write("#" + "x" * (padding - 2) + "\n")  # a comment: git still reads the config
    assert (config.stat().st_size > GIT_CONFIG_SCAN_MAX_BYTES) is over
    binds = GitBinds(fixed.fd, fixed.path, fixed.path)
    try:
        # past the bound the config is not read, so config.worktree is made and bound read-only, as if turned on
        assert (repo / ".git" / "config.worktree").exists() is over
        assert (str(repo / ".git" / "config.worktree") in binds.args) is over
    finally:
        for fd in binds.fds:
            os.close(fd)


# ---------------------------------------------------------------- said in the confirmation


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("git config user.name Someone", "git config"),
        ("git config --local core.hooksPath .githooks", "git config"),
        ("git config set core.editor vim", "git config"),
        ("git config --unset core.bare", "git config"),
        ("git config --add remote.o.fetch x", "git config"),
        ("git config -e", "git config"),
        ("git config user.name", ""),
        ("git config --get user.name", ""),
        ("git config --list", ""),
        ("git config get user.name", ""),
        ("git config --type bool core.bare", ""),
        ("git config --global user.name Someone", ""),  # ~/.gitconfig: read-only anyway, not .git's
        ("git config -f other.cfg a.b c", ""),
        ("git remote add origin https://example.com/r.git", "git remote add"),
        ("git remote set-url origin x", "git remote set-url"),
        ("git remote rename a b", "git remote rename"),
        ("git remote remove a", "git remote remove"),
        ("git remote -v", ""),
        ("git init", "git init in an existing repository"),
        ("git submodule add ../lib lib", "git submodule add"),
        ("git submodule update --init --recursive", "git submodule update"),
        ("git submodule init", "git submodule init"),
        ("git submodule status", ""),
        ("git branch -u origin/main", "git branch -u"),
        ("git branch --set-upstream-to=origin/main", "git branch --set-upstream-to"),
        ("git branch -m old new", "git branch -m"),
        ("git branch feature", ""),
        ("git push -u origin main", "git push -u"),
        ("git push --set-upstream origin main", "git push --set-upstream"),
        ("git push origin main", ""),
        ("git checkout -b topic --track origin/topic", "git checkout --track"),
        ("git checkout -b topic", ""),
        ("git switch -c topic -t origin/topic", "git switch -t"),
        ("git lfs install", "git lfs install"),
        ("git lfs track '*.bin'", ""),
        ("git-lfs install", "git-lfs install"),
        ("git sparse-checkout set src", "git sparse-checkout set"),
        ("git secrets --install", "git secrets --install"),
        ("git -C sub -c core.pager=cat config a.b c", "git config"),
        ("git --git-dir=.git config a.b c", "git config"),
        ("/usr/bin/git config a.b c", "git config"),
        ("pre-commit install", "pre-commit install"),
        ("pip install pre-commit && pre-commit install --install-hooks", "pre-commit install"),
        ("pre-commit run --all-files", ""),
        ("npx husky install", "husky install"),
        ("npx --yes husky init", "husky init"),
        ("npx husky", "husky"),
        ("pnpm exec husky", "husky"),
        ("yarn husky", "husky"),
        ("lefthook install", "lefthook install"),
        ("overcommit --install", "overcommit --install"),
        ("dvc install", "dvc install"),
        ("FOO=1 sudo env -i BAR=2 git remote add o u", "git remote add"),
        ("cd sub; make && git remote add o u | cat", "git remote add"),
        ("make\ngit config a.b c", "git config"),
        ("echo 'git config a.b c'", ""),
        ("git status && git log --oneline", ""),
        ("git commit -m 'git config a.b c'", ""),
        ("echo 'unclosed", ""),
        ("A=1 sudo", ""),
        ("git -C sub --no-pager", ""),
        ("", ""),
    ],
)
def test_which_commands_would_write_the_git_metadata(command: str, said: str) -> None:
    assert git_metadata_writer(command) == said


def test_git_init_writes_the_metadata_only_inside_a_repository() -> None:
    assert git_metadata_writer("git init", in_repository=False) == ""
    assert git_metadata_writer("git init -q && git remote add o u", in_repository=False) == "git remote add"


def test_the_confirmation_says_when_a_command_would_need_the_git_metadata(
    repo: Path, fixed: Root, sandbox: Sandbox
) -> None:
    (repo / "plain").mkdir()
    note = GIT_METADATA_NOTE.format(what="`git remote add`")
    lines = preview("execute_command", {"command": "git remote add o https://x"}, fixed, sandbox.state).lines
    assert lines[-2:] == [describe(sandbox.state, None), note]
    assert "read-only in this sandbox" in note and "--sandbox off" in note
    assert preview("execute_command", {"command": "git status"}, fixed, sandbox.state).lines[-1] == describe(
        sandbox.state, None
    )
    init = preview("execute_command", {"command": "git init"}, fixed, sandbox.state).lines
    assert "`git init in an existing repository`" in init[-1]
    read_only = Sandbox.for_session(detect_sandbox("read-only", False, [], os.environ), os.environ).state
    assert (
        "read-only in this sandbox"
        not in preview("execute_command", {"command": "git config a.b c"}, fixed, read_only).full
    )
    assert (
        git_metadata_note("git init", sandbox.state, str(repo.parent / "elsewhere"), str(repo.parent / "elsewhere"))
        == ""
    )


def test_describe_says_the_git_metadata_is_read_only(sandbox: Sandbox) -> None:
    assert describe(sandbox.state, None) == (
        "sandbox workspace-write (writes: working directory (not .git's hooks, config, info) + private /tmp; "
        "network: allowed once you approve)"
    )
