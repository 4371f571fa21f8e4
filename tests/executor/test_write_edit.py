"""write_file and edit_file: atomic writes, modes kept, no temp left, locate's counting, the 8 MiB cap."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashfloat.executor import EDIT_MAX_FILE_BYTES, LOCATE_MAX_COUNT, ToolError, locate
from tests.executor.conftest import run_json, run_python


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if "dashfloat-tmp" in p.name]


def test_write_creates_parents_and_reports(root: Path) -> None:
    r = run_json("write_file", {"path": "new/deep/a.txt", "content": "héllo\n"}, str(root))
    assert r == {"ok": True, "path": "new/deep/a.txt", "bytes": 7, "created": True}
    assert (root / "new/deep/a.txt").read_text() == "héllo\n"
    r = run_json("write_file", {"path": "new/deep/a.txt", "content": "x"}, str(root))
    assert r["created"] is False and (root / "new/deep/a.txt").read_text() == "x"
    assert leftovers(root / "new/deep") == []


@pytest.mark.parametrize("tool", ["write_file", "edit_file"])
@pytest.mark.parametrize("mode", [0o600, 0o755])
def test_existing_mode_is_preserved(root: Path, tool: str, mode: int) -> None:
    target = root / "secret.txt"
    target.write_text("token = old\n")
    target.chmod(mode)
    args = (
        {"path": "secret.txt", "content": "token = new\n"}
        if tool == "write_file"
        else {"path": "secret.txt", "search_block": "old", "replace_block": "new"}
    )
    assert run_json(tool, args, str(root))["ok"] is True
    assert target.read_text() == "token = new\n"
    assert stat.S_IMODE(target.stat().st_mode) == mode


def test_write_through_symlink_inside_replaces_the_target(root: Path) -> None:
    (root / "real.txt").write_text("old")
    (root / "alias").symlink_to("real.txt")
    assert run_json("write_file", {"path": "alias", "content": "new"}, str(root))["ok"] is True
    assert (root / "alias").is_symlink() and (root / "real.txt").read_text() == "new"


def test_write_escapes_create_nothing_outside(root: Path) -> None:
    (root / "sub").symlink_to(root.parent / "outside")
    for path in ("sub/planted.txt", "../outside/planted.txt", str(root) + "-evil/planted.txt"):
        r = run_json("write_file", {"path": path, "content": "x"}, str(root))
        assert str(r["error"]).startswith("path escapes the working directory"), path
    assert sorted(p.name for p in (root.parent / "outside").iterdir()) == ["secret.txt"]
    assert sorted(p.name for p in (root.parent / "root-evil").iterdir()) == ["x.txt"]


def test_failed_rename_leaves_no_temp_file(root: Path) -> None:
    (root / "d").mkdir()
    (root / "d" / "keep").write_text("k")
    r = run_json("write_file", {"path": "d", "content": "x"}, str(root))
    assert r == {"ok": False, "error": "is a directory: d"}
    assert leftovers(root) == []


def test_failed_write_midway_leaves_no_temp_file(root: Path) -> None:
    (root / "a.txt").write_text("original\n")
    # A real EFBIG in the middle of writing the temp file: the file-size limit is below the content size.
    out = run_python(
        "import resource, signal\n"
        "from dashfloat.executor import run_tool\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        f"print(run_tool('write_file', {{'path': 'a.txt', 'content': 'x' * 100000}}, {str(root)!r}))\n"
        f"print(run_tool('edit_file', {{'path': 'a.txt', 'search_block': 'original',"
        f" 'replace_block': 'y' * 100000}}, {str(root)!r}))\n"
    )
    assert out.count("ToolFailed(error=") == 2, out
    assert (root / "a.txt").read_text() == "original\n"
    assert leftovers(root) == []


def test_surrogates_and_fifo_are_errors(root: Path) -> None:
    r = run_json("write_file", {"path": "a.txt", "content": "bad \udc80"}, str(root))
    assert str(r["error"]).startswith("content is not valid Unicode")
    os.mkfifo(root / "pipe")
    assert run_json("write_file", {"path": "pipe", "content": "x"}, str(root)) == {
        "ok": False,
        "error": "not a regular file: pipe",
    }
    assert stat.S_ISFIFO((root / "pipe").stat().st_mode)
    r = run_json("edit_file", {"path": "pipe", "search_block": "a", "replace_block": "b"}, str(root))
    assert r == {"ok": False, "error": "not a regular file: pipe"}


def test_edit_unique_match(root: Path) -> None:
    (root / "m.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    r = run_json("edit_file", {"path": "m.py", "search_block": "return 2", "replace_block": "return 3"}, str(root))
    assert r == {"ok": True, "path": "m.py", "line": 5, "bytes": 45}
    assert (root / "m.py").read_text().endswith("return 3\n")


def test_edit_not_found_and_ambiguous_change_nothing(root: Path) -> None:
    original = "x = 1\nx = 1\n"
    (root / "m.py").write_text(original)
    r = run_json("edit_file", {"path": "m.py", "search_block": "y = 1", "replace_block": "y"}, str(root))
    assert str(r["error"]).startswith("search block not found")
    r = run_json("edit_file", {"path": "m.py", "search_block": "x = 1", "replace_block": "x"}, str(root))
    assert str(r["error"]).startswith("search block matches 2 times")
    assert (root / "m.py").read_text() == original
    assert leftovers(root) == []


def test_edit_size_cap_is_crossed_by_stat(root: Path) -> None:
    at = root / "at.bin"
    with open(at, "wb") as f:
        f.write(b"needle\n")
        f.truncate(EDIT_MAX_FILE_BYTES)
    r = run_json("edit_file", {"path": "at.bin", "search_block": "needle", "replace_block": "thread"}, str(root))
    assert r["ok"] is True and at.stat().st_size == EDIT_MAX_FILE_BYTES
    over = root / "over.bin"
    with open(over, "wb") as f:
        f.write(b"needle\n")
        f.truncate(EDIT_MAX_FILE_BYTES + 1)
    r = run_json("edit_file", {"path": "over.bin", "search_block": "needle", "replace_block": "x"}, str(root))
    assert r == {
        "ok": False,
        "error": f"file is {EDIT_MAX_FILE_BYTES + 1} bytes; edit_file refuses files over "
        f"{EDIT_MAX_FILE_BYTES}: over.bin",
    }


def test_locate_overlapping_matches_are_ambiguous() -> None:
    with pytest.raises(ToolError, match="matches 2 times"):
        locate(b"aaa", b"aa")
    assert locate(b"xaay", b"aa") == 1
    with pytest.raises(ToolError, match="empty"):
        locate(b"abc", b"")


def test_locate_count_cap_is_crossed() -> None:
    with pytest.raises(ToolError, match=f"matches {LOCATE_MAX_COUNT} times"):
        locate(b"a" * LOCATE_MAX_COUNT, b"a")
    with pytest.raises(ToolError, match=f"matches more than {LOCATE_MAX_COUNT} times"):
        locate(b"a" * (LOCATE_MAX_COUNT + 1), b"a")


def _occurrences(content: bytes, search: bytes) -> int:
    return sum(1 for i in range(len(content) - len(search) + 1) if content[i : i + len(search)] == search)


@given(
    content=st.binary(max_size=40).map(lambda b: bytes(c % 3 + 97 for c in b)),
    search=st.binary(min_size=1, max_size=4).map(lambda b: bytes(c % 3 + 97 for c in b)),
)
def test_locate_agrees_with_a_naive_count(content: bytes, search: bytes) -> None:
    n = _occurrences(content, search)
    if n == 1:
        start = locate(content, search)
        assert content[start : start + len(search)] == search
        return
    with pytest.raises(ToolError) as info:
        locate(content, search)
    assert ("not found" in str(info.value)) == (n == 0)
    if n > 1:
        assert f"matches {n} times" in str(info.value)


def test_long_non_ascii_names_fit_the_temp_file_under_name_max(root: Path) -> None:
    name = "文" * 80  # 240 bytes: a legal name whose temp name must still be under 255 bytes
    assert run_json("write_file", {"path": name, "content": "one\n"}, str(root), 5.0)["ok"] is True
    edit = {"path": name, "search_block": "one", "replace_block": "two"}
    assert run_json("edit_file", edit, str(root), 5.0)["ok"] is True
    assert (root / name).read_text() == "two\n" and leftovers(root) == []
