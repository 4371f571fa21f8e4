"""A real git repository whose own config would run a marker-writing program: the read-only lines must not."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dashfloat.permissions import read_only_command

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

HOSTILE_CONFIG = """
[core]
\tfsmonitor = "touch {m}/fsmonitor; false"
\tpager = "touch {m}/pager; cat"
[diff]
\texternal = "touch {m}/external"
[diff "evil"]
\ttextconv = "touch {m}/textconv; cat"
\tcommand = "touch {m}/diffcmd"
[filter "evil"]
\tclean = "touch {m}/clean; cat"
\tsmudge = "touch {m}/smudge; cat"
[log]
\tshowSignature = true
[gpg]
\tprogram = "touch {m}/gpg"
[pager]
\tstatus = "touch {m}/pagerstatus; cat"
"""


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir()
    markers.mkdir()
    git(repo, "init", "-q", ".")
    git(repo, "config", "user.email", "a@example.com")
    git(repo, "config", "user.name", "a")
    (repo / ".gitattributes").write_text("*.txt filter=evil diff=evil\n")
    (repo / "f.txt").write_text("one\n")
    (repo / "g.md").write_text("one\n")  # no attributes: diff.external is the one for it
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    with open(repo / ".git" / "config", "a") as config:
        config.write(HOSTILE_CONFIG.format(m=markers))
    (repo / "f.txt").write_text("one\ntwo\n")
    (repo / "g.md").write_text("one\nthree\n")
    os.utime(repo / "f.txt", (946_684_800, 946_684_800))  # stat-dirty: status and diff must look inside
    return repo, markers


def run(repo: Path, line: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["sh", "-c", line], cwd=repo, capture_output=True, text=True, env=env, timeout=60)


COMMANDS = ["git status", "git diff", "git diff --stat", "git log -p", "git show", "git log --oneline"]


def test_the_repository_does_run_its_programs_when_not_neutralised(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    for line in COMMANDS:
        run(repo, line)
    assert {p.name for p in markers.iterdir()} >= {
        "fsmonitor",
        "external",
        "clean",
        "textconv",
        "diffcmd",
    }  # the attack is real


@pytest.mark.parametrize("line", COMMANDS)
def test_read_only_git_runs_none_of_them_and_still_answers(hostile: tuple[Path, Path], line: str) -> None:
    repo, markers = hostile
    safe = read_only_command(line)
    assert safe is not None
    done = run(repo, safe)
    assert done.returncode == 0, done.stderr
    assert list(markers.iterdir()) == []
    if line == "git status":
        assert "f.txt" in done.stdout
    if line == "git diff":
        assert "+two" in done.stdout


def test_a_filter_driver_named_with_equals_stops_the_command(hostile: tuple[Path, Path]) -> None:
    repo, markers = hostile
    with open(repo / ".git" / "config", "a") as config:
        config.write(f'[filter "a=b"]\n\tclean = "touch {markers}/eq; cat"\n')
    (repo / ".gitattributes").write_text("*.txt filter=a=b\n")
    safe = read_only_command("git status")
    assert safe is not None
    done = run(repo, safe)
    assert done.returncode != 0 and "holds =" in done.stderr
    assert list(markers.iterdir()) == []
