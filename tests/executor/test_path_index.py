"""The @ completion file index on real trees: git's listing, the .gitignore walk, both bounds, the path policy."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from dashfloat.executor._limits import PATH_INDEX_MAX_ENTRIES, PATH_INDEX_MAX_WALK_S, PATH_INDEX_REFRESH_AGE_S
from dashfloat.executor._path_index import PathIndex, _with_directories, build_index, find_paths, stale
from dashfloat.executor.path_policy import Root

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
UNHURRIED_S = 60.0
"""The time bound of a test that is not about time: PATH_INDEX_MAX_WALK_S (1 s) was crossed by a 40-file walk on a
loaded machine (the full suite under coverage, two cores shared), which then failed on its count."""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def make_tree(root: Path) -> None:
    (root / "README.md").write_text("# hi\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("x = 1\n")
    (root / "src" / "app.log").write_text("noise\n")
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_text("b\n")
    (root / "my notes.md").write_text("n\n")
    (root / ".gitignore").write_text("*.log\nbuild/\n")


@pytest.fixture
def opened(root: Path) -> Iterator[Root]:
    fixed = Root(str(root))
    yield fixed
    fixed.close()


@pytest.fixture(autouse=True)
def no_global_git_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)


def test_the_walk_honours_gitignore_and_lists_directories(root: Path, opened: Root) -> None:
    make_tree(root)
    index = build_index(opened, max_walk_s=UNHURRIED_S)
    assert index.paths == [".gitignore", "README.md", "my notes.md", "src/", "src/app.py"]
    assert index.notice == ""


def test_a_nested_gitignore_applies_below_its_directory_and_a_negation_keeps_a_file(root: Path, opened: Root) -> None:
    (root / "a").mkdir()
    (root / "a" / ".gitignore").write_text("*.tmp\n!keep.tmp\n")
    (root / "a" / "x.tmp").write_text("")
    (root / "a" / "keep.tmp").write_text("")
    (root / "top.tmp").write_text("")  # above the nested file: not ignored
    paths = build_index(opened, max_walk_s=UNHURRIED_S).paths
    assert "a/x.tmp" not in paths and "a/keep.tmp" in paths and "top.tmp" in paths


def test_git_dot_git_is_never_listed(root: Path, opened: Root) -> None:
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("not really a repository\n")
    (root / "f.txt").write_text("")
    assert build_index(opened, max_walk_s=UNHURRIED_S).paths == ["f.txt"]  # git refuses this .git; the walk skips it


@needs_git
def test_in_a_git_repository_git_lists_tracked_and_untracked_but_not_ignored(root: Path, opened: Root) -> None:
    make_tree(root)
    git(root, "init", "-q", ".")
    git(root, "add", "README.md", ".gitignore")
    (root / ".git" / "info" / "exclude").write_text("my notes.md\n")  # git's own ignore file: only git knows it
    index = build_index(opened, max_walk_s=UNHURRIED_S)
    assert index.paths == [".gitignore", "README.md", "src/", "src/app.py"]


@needs_git
def test_git_runs_no_program_the_repositorys_config_names(root: Path, opened: Root, tmp_path: Path) -> None:
    git(root, "init", "-q", ".")
    (root / "f.txt").write_text("")
    git(root, "add", "f.txt")
    marker = tmp_path / "fsmonitor-ran"
    with open(root / ".git" / "config", "a") as config:
        config.write(f'[core]\n\tfsmonitor = "touch {marker}; false"\n')
    assert build_index(opened, max_walk_s=UNHURRIED_S).paths == ["f.txt"]
    assert not marker.exists()


def test_the_entry_bound_stops_the_walk_and_says_so(root: Path, opened: Root) -> None:
    for i in range(30):
        (root / f"f{i:02}.txt").write_text("")
    index = build_index(opened, max_walk_s=UNHURRIED_S, max_entries=10)
    assert len(index.paths) == 10
    assert "stopped at 10 entries" in index.notice
    assert (
        len(build_index(opened, max_walk_s=UNHURRIED_S, max_entries=30).paths) == 30
    )  # at the bound: all of them, no notice
    assert build_index(opened, max_walk_s=UNHURRIED_S, max_entries=30).notice == ""


@needs_git
def test_the_entry_bound_stops_git_too(root: Path, opened: Root) -> None:
    git(root, "init", "-q", ".")
    for i in range(30):
        (root / f"f{i:02}.txt").write_text("")
    index = build_index(opened, max_walk_s=UNHURRIED_S, max_entries=10)
    assert len(index.paths) == 10 and "stopped at 10 entries" in index.notice


def test_the_time_bound_stops_the_walk_and_says_so(root: Path, opened: Root) -> None:
    for i in range(5):
        (root / f"d{i}").mkdir()
        (root / f"d{i}" / "f.txt").write_text("")
    looks = iter(range(1000))
    # time stands still for the first 15 looks at the clock, then the whole bound has passed
    index = build_index(opened, clock=lambda: 0.0 if next(looks) < 15 else PATH_INDEX_MAX_WALK_S)
    assert 0 < len(index.paths) < 10
    assert f"stopped after {PATH_INDEX_MAX_WALK_S:g} s" in index.notice


def test_the_bounds_are_named_and_sane() -> None:
    assert PATH_INDEX_MAX_ENTRIES >= 10_000 and 0 < PATH_INDEX_MAX_WALK_S <= 5


def test_symlinks_are_listed_not_followed_and_one_leading_out_is_never_offered(root: Path, opened: Root) -> None:
    outside = root.parent / "outside"
    (root / "out").symlink_to(outside)  # a directory outside: not entered, and refused by the path policy
    (root / "secret-link.txt").symlink_to(outside / "secret.txt")
    (root / "inner.txt").write_text("")
    (root / "in-link.txt").symlink_to("inner.txt")  # relative, inside: followed by the tools, so offered
    index = build_index(opened, max_walk_s=UNHURRIED_S)
    assert "out/secret.txt" not in index.paths and "out" in index.paths
    offered = find_paths(index, opened, "", 20)
    assert "secret-link.txt" not in offered and "out" not in offered
    assert {"inner.txt", "in-link.txt"} <= set(offered)


def test_find_paths_ranks_and_bounds(root: Path, opened: Root) -> None:
    make_tree(root)
    index = build_index(opened, max_walk_s=UNHURRIED_S)
    assert find_paths(index, opened, "READ", 5)[0] == "README.md"
    assert find_paths(index, opened, "", 2) == ["src/", "README.md"]


@needs_git
def test_the_time_bound_stops_git_too(root: Path, opened: Root) -> None:
    git(root, "init", "-q", ".")
    (root / "f.txt").write_text("")
    ticks = iter(range(1000))
    index = build_index(opened, max_walk_s=1.0, clock=lambda: float(next(ticks)))
    assert index.paths == [] and "stopped after" in index.notice


def test_a_new_mention_rebuilds_an_index_only_once_it_is_old_enough() -> None:
    index = PathIndex(["a"], built_at=100.0)
    assert stale(None, refresh=False, now=0.0)
    assert not stale(index, refresh=True, now=100.0 + PATH_INDEX_REFRESH_AGE_S - 0.001)
    assert stale(index, refresh=True, now=100.0 + PATH_INDEX_REFRESH_AGE_S)
    assert not stale(index, refresh=False, now=100.0 + 10 * PATH_INDEX_REFRESH_AGE_S)  # typing on: the same index


@pytest.mark.parametrize("use_git", [False, True])
def test_a_name_that_is_not_utf8_is_left_out_not_a_crash(root: Path, opened: Root, use_git: bool) -> None:
    if use_git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    if use_git:
        git(root, "init", "-q", ".")
    os.close(os.open(os.path.join(os.fsencode(root), b"bad-\xff.txt"), os.O_CREAT | os.O_WRONLY, 0o644))
    (root / "good.txt").write_text("")
    index = build_index(opened, max_walk_s=UNHURRIED_S)
    assert index.paths == ["good.txt"]
    msgspec.msgpack.encode(find_paths(index, opened, "", 20))  # what goes over the pipe encodes


def test_the_entry_bound_in_force_is_crossed_by_one_more_file() -> None:
    at_bound = [f"f{i}.txt" for i in range(PATH_INDEX_MAX_ENTRIES)]
    assert _with_directories(at_bound, PATH_INDEX_MAX_ENTRIES) == (at_bound, False)
    over, cut = _with_directories([*at_bound, "one-more.txt"], PATH_INDEX_MAX_ENTRIES)
    assert cut and len(over) == PATH_INDEX_MAX_ENTRIES
    nested, cut = _with_directories(["d/e/f.txt"], 2)  # the directories above a file count as entries too
    assert (nested, cut) == (["d/", "d/e/"], True)


def test_a_gitignore_pattern_with_exponential_matching_is_cut_off_by_the_time_bound(root: Path, opened: Root) -> None:
    """A hostile tree: one pattern whose regex backtracks for minutes against one long name."""
    (root / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*a*a*b\n")
    (root / ("a" * 200)).write_text("")  # a single match of the pattern against this name takes hours
    index = build_index(opened, max_walk_s=0.2)
    assert index.notice == "the file index stopped after 0.2 s"
    assert ("a" * 200) not in index.paths


def test_a_child_that_finishes_sends_every_entry_and_its_notice(root: Path, opened: Root) -> None:
    for i in range(40):
        (root / f"f{i:02}.txt").write_text("")
    index = build_index(opened, max_walk_s=UNHURRIED_S, max_entries=25)
    assert len(index.paths) == 25 and index.notice == "the file index stopped at 25 entries"
