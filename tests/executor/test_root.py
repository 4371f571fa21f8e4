"""The root fixed at start: a held fd, kernel-checked resolution, and every tool refusing a swapped root."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.executor._openat2 import RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, openat2, openat2_works
from dashfloat.executor.path_policy import PathError, PathEscape, Root, inside, loop_message
from tests.executor.conftest import run_json

# Both resolvers: openat2 beneath the held fd, and the fallback anchored at the start-time real path.
MODES = [pytest.param(True, id="openat2"), pytest.param(False, id="fallback")]


def snapshot(directory: Path) -> set[str]:
    """Every path under ``directory`` (to prove that nothing was created or changed there)."""
    return {
        str(p.relative_to(directory)) + ("/" if p.is_dir() else f":{p.read_bytes()!r}") for p in directory.rglob("*")
    }


@pytest.fixture(params=MODES)
def fixed(request: pytest.FixtureRequest, root: Path) -> Iterator[Root]:
    (root / "a.txt").write_text("inside\n")
    (root / "sub").mkdir()
    r = Root(str(root), use_openat2=request.param)
    yield r
    r.close()


def every_tool(r: Root) -> dict[str, dict[str, Any]]:
    return {
        "read_file": run_json("read_file", {"path": "a.txt"}, r),
        "list_directory": run_json("list_directory", {"path": "."}, r),
        "write_file": run_json("write_file", {"path": "new.txt", "content": "payload"}, r),
        "edit_file": run_json("edit_file", {"path": "a.txt", "search_block": "inside", "replace_block": "x"}, r),
        "execute_command": run_json("execute_command", {"command": "touch made-by-command"}, r),
    }


def test_openat2_is_available_on_this_kernel() -> None:
    # CI's kernel is >= 5.6: the fallback must never be what silently runs there.
    assert openat2_works()


def test_openat2_refuses_every_way_out(root: Path) -> None:
    (root / "up").symlink_to("..")
    (root / "abs").symlink_to(root)
    fd = os.open(root, os.O_PATH | os.O_DIRECTORY)
    try:
        for path in (b"..", b"up/outside", b"abs", b"/etc/passwd"):
            with pytest.raises(OSError) as info:
                openat2(fd, path, os.O_RDONLY, 0, RESOLVE_BENEATH)
            assert info.value.errno == errno.EXDEV, path
        with pytest.raises(OSError) as info:
            openat2(os.open("/proc/self", os.O_PATH), b"exe", os.O_PATH, 0, RESOLVE_NO_MAGICLINKS)
        assert info.value.errno == errno.ELOOP
        inner = openat2(fd, b"up/root", os.O_PATH, 0, 0)  # without rules it is an ordinary open
        os.close(inner)
    finally:
        os.close(fd)


@pytest.mark.parametrize("how", ["symlink", "moved", "deleted", "other directory"])
def test_a_swapped_root_fails_every_tool_and_touches_nothing_outside(root: Path, fixed: Root, how: str) -> None:
    outside = root.parent / "outside"
    (outside / "a.txt").write_text("outside\n")
    before_outside = snapshot(outside)
    moved = root.parent / "root.old"
    if how == "deleted":
        for p in sorted(root.rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        root.rmdir()
    else:
        root.rename(moved)
    if how == "symlink":
        root.symlink_to(outside)  # the attack: `mv proj proj.old && ln -s ../outside proj`
    elif how == "other directory":
        root.mkdir()
    before_moved = snapshot(moved) if moved.exists() else set()
    results = every_tool(fixed)
    expected = {
        "symlink": "was replaced by a symlink",
        "moved": "was moved or deleted",
        "deleted": "was moved or deleted",
        "other directory": "was replaced by another directory",
    }[how]
    for name, result in results.items():
        assert result["ok"] is False, (name, result)
        assert f"the working directory {fixed.path} {expected}" in result["error"], (name, result)
    assert snapshot(outside) == before_outside
    if moved.exists():
        assert snapshot(moved) == before_moved
    if how == "other directory":
        assert snapshot(root) == set()


@pytest.mark.parametrize("path", [".", "sub/..", "./", "ROOT"])
def test_writing_to_the_root_itself_creates_nothing_anywhere(root: Path, fixed: Root, path: str) -> None:
    path = str(root) if path == "ROOT" else path
    before = snapshot(root.parent)
    result = run_json("write_file", {"path": path, "content": "payload"}, fixed)
    assert result == {"ok": False, "error": f"cannot write to the working directory itself: {path}"}
    assert snapshot(root.parent) == before


def test_writing_to_a_directory_creates_nothing(root: Path, fixed: Root) -> None:
    before = snapshot(root.parent)
    for path in ("sub", "sub/", "sub/."):
        result = run_json("write_file", {"path": path, "content": "payload"}, fixed)
        assert result["ok"] is False and "directory" in result["error"], (path, result)
    assert run_json("edit_file", {"path": "sub", "search_block": "a", "replace_block": "b"}, fixed)["ok"] is False
    assert snapshot(root.parent) == before


def test_tools_work_beneath_the_fixed_root(root: Path, fixed: Root) -> None:
    (root / "alias").symlink_to("a.txt")
    (root / "sub" / "up").symlink_to("../a.txt")
    assert run_json("read_file", {"path": "sub/up"}, fixed)["content"] == "inside\n"
    assert run_json("write_file", {"path": "alias", "content": "via link\n"}, fixed)["ok"] is True
    assert (root / "alias").is_symlink() and (root / "a.txt").read_text() == "via link\n"
    assert run_json("write_file", {"path": "deep/er/f.txt", "content": "x"}, fixed)["created"] is True
    assert (root / "deep" / "er" / "f.txt").read_text() == "x"
    names = [e["name"] for e in run_json("list_directory", {"path": "."}, fixed)["entries"]]
    assert names == ["a.txt", "alias", "deep", "sub"]
    assert not [p for p in root.rglob("*dashfloat-tmp")]


def test_a_symlink_out_is_refused_by_every_file_tool(root: Path, fixed: Root) -> None:
    (root / "sub" / "out").symlink_to("../../outside")
    (root / "leak").symlink_to(root.parent / "outside" / "secret.txt")
    before = snapshot(root.parent / "outside")
    for name, args in [
        ("read_file", {"path": "leak"}),
        ("read_file", {"path": "sub/out/secret.txt"}),
        ("list_directory", {"path": "sub/out"}),
        ("write_file", {"path": "leak", "content": "x"}),
        ("write_file", {"path": "sub/out/new/f.txt", "content": "x"}),
        ("edit_file", {"path": "leak", "search_block": "secret", "replace_block": "x"}),
        ("execute_command", {"command": "true", "cwd": "sub/out"}),
    ]:
        result = run_json(name, args, fixed)
        assert result["ok"] is False and result["error"].startswith("path escapes the working directory"), (
            name,
            result,
        )
    assert snapshot(root.parent / "outside") == before


def test_the_fd_is_held_for_the_roots_lifetime(root: Path) -> None:
    r = Root(str(root))
    assert os.path.samestat(os.fstat(r.fd), os.stat(root))
    fd = r.fd
    r.close()
    with pytest.raises(OSError):
        os.fstat(fd)


# ---------------------------------------------------------------- property: nothing located outside

_PARTS = ["a", "b", "..", ".", "f.txt", "link_in", "link_out", "link_up", "dangle", "outside", "new"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("rootprop")
    root = base / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "f.txt").write_text("f")
    (root / "link_in").symlink_to("a")
    (root / "a" / "link_out").symlink_to(base / "outside")
    (root / "a" / "b" / "link_up").symlink_to("../../..")
    (root / "dangle").symlink_to(base / "outside" / "nope")
    (base / "outside").mkdir()
    return root


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from(_PARTS), min_size=1, max_size=8), beneath=st.booleans())
def test_locate_never_leaves_the_root(tree: Path, parts: list[str], beneath: bool) -> None:
    r = Root(str(tree), use_openat2=beneath)
    try:
        rel = r.locate("/".join(parts))
    except (PathError, OSError):  # ENOENT, ENOTDIR, ELOOP: a result naming the path, never an escape
        return
    finally:
        r.close()
    real = os.fsencode(os.path.realpath(tree / os.fsdecode(rel)))
    assert inside(real, os.fsencode(os.path.realpath(tree)))


@pytest.mark.parametrize("how", ["symlink", "deleted"])
def test_an_executor_started_after_the_swap_does_not_adopt_the_new_target(root: Path, how: str) -> None:
    # A restarted executor is given the launch's real path; it must not follow it to where it points now.
    launch_path = str(root)
    outside = root.parent / "outside"
    before = snapshot(outside)
    root.rename(root.parent / "root.old")
    if how == "symlink":
        root.symlink_to(outside)
    r = Root(launch_path, launch_real=True)
    try:
        expected = "was replaced by a symlink" if how == "symlink" else "was moved or deleted"
        for name, result in every_tool(r).items():
            assert result["ok"] is False and f"{launch_path} {expected}" in result["error"], (name, result)
    finally:
        r.close()
    assert snapshot(outside) == before


# ---------------------------------------------------------------- what a refused path is called (ADR 0057 §3)


def test_a_symlink_loop_is_called_a_loop_not_an_escape(root: Path, fixed: Root) -> None:
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "self").symlink_to("self")
    for name, args, shown in [
        ("read_file", {"path": "a"}, "a"),
        ("read_file", {"path": "self/x.txt"}, "self/x.txt"),
        ("list_directory", {"path": "b"}, "b"),
        ("write_file", {"path": "a", "content": "x"}, "a"),
        ("write_file", {"path": "self/new.txt", "content": "x"}, "self/new.txt"),
        ("edit_file", {"path": "b", "search_block": "x", "replace_block": "y"}, "b"),
        ("execute_command", {"command": "true", "cwd": "self"}, "self"),
    ]:
        result = run_json(name, args, fixed)
        assert result == {"ok": False, "error": loop_message(shown)}, (name, result)
    assert loop_message("a").startswith("symlink loop: a (") and "ELOOP" in loop_message("a")


def test_a_symlink_refused_although_it_ends_inside_names_where_it_ends(root: Path) -> None:
    # The kernel (RESOLVE_BENEATH) never follows an absolute link, nor one stepping above the root on its way back
    # in: refused (unchanged), but the model is told the path it ends at instead of "escapes".
    (root / "a.txt").write_text("inside\n")
    (root / "abs").symlink_to(root / "a.txt")
    (root / "round").symlink_to(f"../{root.name}/a.txt")
    (root / "out").symlink_to(root.parent)
    r = Root(str(root), use_openat2=True)
    try:
        for path in ("abs", "round"):
            result = run_json("read_file", {"path": path}, r)
            assert result["ok"] is False and "escapes" not in result["error"], result
            assert result["error"].startswith(f"refused: {path} goes through a symlink that is absolute"), result
            assert result["error"].endswith("although it ends inside, at a.txt: use that path"), result
        assert run_json("read_file", {"path": "out/x"}, r) == {
            "ok": False,
            "error": "path escapes the working directory: out/x (through a symlink)",
        }
    finally:
        r.close()


def test_a_proc_magic_link_is_an_escape_not_a_loop() -> None:
    r = Root(f"/proc/{os.getpid()}", use_openat2=True)  # a tree whose "cwd" entry is a magic link
    try:
        with pytest.raises(PathEscape, match=r"through a /proc magic link"):
            r.locate("cwd/x")
    finally:
        r.close()
