"""Previews: unified diffs, + lines for new files, the 50-line window, digests, and the digest check."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from dashfloat.executor import (
    ABSENT_DIGEST,
    EDIT_MAX_FILE_BYTES,
    PREVIEW_FULL_MAX_BYTES,
    PREVIEW_MAX_LINE_CHARS,
    PREVIEW_MAX_LINES,
    preview,
)
from tests.executor.conftest import run_json


def test_new_file_is_all_plus_lines(root: Path) -> None:
    p = preview("write_file", {"path": "n.py", "content": "a\nb\n"}, str(root))
    assert (p.lines, p.digest, p.error) == (["+a", "+b"], ABSENT_DIGEST, None)


def test_write_over_existing_is_a_unified_diff(root: Path) -> None:
    (root / "f.py").write_text("one\ntwo\nthree\n")
    p = preview("write_file", {"path": "f.py", "content": "one\n2\nthree\n"}, str(root))
    assert p.lines == ["@@ -1,3 +1,3 @@", " one", "-two", "+2", " three"]
    assert p.digest == hashlib.sha256(b"one\ntwo\nthree\n").hexdigest()


def test_edit_preview_and_its_refusals(root: Path) -> None:
    (root / "f.py").write_text("x = 1\ny = 2\n")
    p = preview("edit_file", {"path": "f.py", "search_block": "y = 2", "replace_block": "y = 3"}, str(root))
    assert p.lines == ["@@ -1,2 +1,2 @@", " x = 1", "-y = 2", "+y = 3"] and p.error is None
    missing = preview("edit_file", {"path": "f.py", "search_block": "z", "replace_block": "q"}, str(root))
    assert str(missing.error).startswith("search block not found") and missing.lines == []
    bad = preview("edit_file", {"path": "f.py", "search_block": "", "replace_block": "q"}, str(root))
    assert "empty" in str(bad.error)
    out = preview("write_file", {"path": "../outside/x", "content": ""}, str(root))
    assert str(out.error).startswith("path escapes the working directory")


def test_preview_window_is_crossed(root: Path) -> None:
    at = preview("write_file", {"path": "a", "content": "x\n" * PREVIEW_MAX_LINES}, str(root))
    assert len(at.lines) == PREVIEW_MAX_LINES
    over = preview("write_file", {"path": "a", "content": "x\n" * (PREVIEW_MAX_LINES + 7)}, str(root))
    assert over.lines[:-1] == ["+x"] * PREVIEW_MAX_LINES
    assert over.lines[-1] == "[… 7 more lines not shown]"


def test_long_preview_lines_are_cut(root: Path) -> None:
    at = preview("write_file", {"path": "a", "content": "y" * (PREVIEW_MAX_LINE_CHARS - 1)}, str(root))
    assert at.lines == ["+" + "y" * (PREVIEW_MAX_LINE_CHARS - 1)]
    over = preview("write_file", {"path": "a", "content": "y" * PREVIEW_MAX_LINE_CHARS}, str(root))
    assert over.lines == ["+" + "y" * (PREVIEW_MAX_LINE_CHARS - 1) + " [… 1 more characters]"]


def test_command_preview(root: Path) -> None:
    (root / "sub").mkdir()
    p = preview("execute_command", {"command": "make test", "cwd": "sub"}, str(root))
    assert p.lines == [
        "$ make test",
        f"in {os.path.realpath(root)}/sub",
        "not sandboxed (--sandbox off): runs with your full permissions",  # no sandbox given: run_tool's default
    ]
    assert p.digest is None
    assert str(preview("execute_command", {"command": "ls", "cwd": "/"}, str(root)).error).startswith("path escapes")


def test_what_was_previewed_is_what_lands(root: Path) -> None:
    target = root / "f.py"
    target.write_text("v = 1\n")
    args = {"path": "f.py", "search_block": "v = 1", "replace_block": "v = 2"}
    digest = preview("edit_file", args, str(root)).digest
    target.write_text("v = 1\n# changed behind our back\n")
    r = run_json("edit_file", args, str(root), expect_digest=digest)
    assert str(r["error"]).startswith("file changed since the preview")
    assert target.read_text() == "v = 1\n# changed behind our back\n"
    digest = preview("edit_file", args, str(root)).digest
    assert run_json("edit_file", args, str(root), expect_digest=digest)["ok"] is True
    assert target.read_text() == "v = 2\n# changed behind our back\n"


def test_write_digest_check_covers_creation(root: Path) -> None:
    args = {"path": "new.txt", "content": "mine"}
    digest = preview("write_file", args, str(root)).digest
    (root / "new.txt").write_text("someone else's")
    r = run_json("write_file", args, str(root), expect_digest=digest)
    assert str(r["error"]).startswith("file changed since the preview")
    assert (root / "new.txt").read_text() == "someone else's"


def test_the_full_preview_holds_every_line_and_the_summary_counts_them(root: Path) -> None:
    (root / "f.py").write_text("".join(f"line {i}\n" for i in range(300)))
    new = "".join(f"line {i}\n" for i in range(300) if i % 3) + "tail\n"
    p = preview("write_file", {"path": "f.py", "content": new}, str(root))
    diff = p.full.split("\n")
    assert len(p.lines) == PREVIEW_MAX_LINES + 1 and len(diff) > PREVIEW_MAX_LINES
    assert p.summary == f"+1 −100 · {len(new.encode())} bytes"
    assert sum(line.startswith("-line") for line in diff) == 100 and "+tail" in diff
    command = preview("execute_command", {"command": "make\necho done"}, str(root))
    assert command.full.startswith(f"$ make\n  echo done\nin {root}") and command.summary == f"in {root}"


def test_the_full_preview_is_cut_at_its_cap_with_a_marker(root: Path) -> None:
    line = "x" * 1022  # with its "+" and the newline, 1024 bytes of preview a line
    at_cap = "\n".join([line] * (PREVIEW_FULL_MAX_BYTES // 1024)) + "\n"
    p = preview("write_file", {"path": "big.txt", "content": at_cap}, str(root))
    assert "more bytes of the preview not shown" not in p.full and len(p.full.encode()) <= PREVIEW_FULL_MAX_BYTES
    over = at_cap + line * 2 + "\n"
    p = preview("write_file", {"path": "big.txt", "content": over}, str(root))
    body, _, marker = p.full.rpartition("\n")
    assert marker.startswith("[… ") and f"(cap {PREVIEW_FULL_MAX_BYTES} bytes)" in marker
    assert len(body.encode()) <= PREVIEW_FULL_MAX_BYTES and p.summary.startswith("new file")


def test_what_a_diff_cannot_show_is_said_in_one_line(root: Path) -> None:
    new_binary = preview("write_file", {"path": "n.bin", "content": "a\0b"}, str(root))
    assert new_binary.lines == ["[new binary file, 3 bytes]"] and new_binary.error is None
    (root / "big.txt").write_bytes(b"x" * (EDIT_MAX_FILE_BYTES + 1))
    over_cap = preview("write_file", {"path": "big.txt", "content": "small\n"}, str(root))
    assert over_cap.lines == [
        f"[replaces a {EDIT_MAX_FILE_BYTES + 1}-byte file, over {EDIT_MAX_FILE_BYTES} bytes: no diff shown]"
    ]
    (root / "old.bin").write_bytes(b"\x00\x01\x02")
    binary = preview("write_file", {"path": "old.bin", "content": "text\n"}, str(root))
    assert binary.lines == ["[binary content: 3 bytes replaced by 5 bytes]"]
    (root / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    endings = preview("write_file", {"path": "crlf.txt", "content": "a\nb\n"}, str(root))
    assert endings.lines == ["[no line changes (the bytes differ only in line endings)]"]
    same = preview("write_file", {"path": "crlf.txt", "content": "a\r\nb\r\n"}, str(root))
    assert same.lines == ["[no change]"]


def test_reads_and_listings_preview_as_one_line_and_still_check_the_path(root: Path) -> None:
    (root / "a.txt").write_text("hi\n")
    assert preview("read_file", {"path": "a.txt"}, str(root)).lines == ["read_file a.txt"]
    assert preview("list_directory", {"path": "."}, str(root)).lines == ["list_directory ."]
    escape = preview("read_file", {"path": "../outside/secret.txt"}, str(root))
    assert escape.lines == [] and str(escape.error).startswith("path escapes the working directory")


def test_a_command_with_a_nul_byte_is_refused_at_preview(root: Path) -> None:
    p = preview("execute_command", {"command": "ls\0rm -rf ."}, str(root))
    assert (p.lines, p.error) == ([], "command contains a NUL byte")


def test_a_write_through_a_link_into_git_is_previewed_as_protected(tmp_path: Path) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "h").symlink_to(".git/hooks")
    p = preview("write_file", {"path": "h/post-checkout", "content": "x"}, str(tmp_path))
    assert p.error is None and p.protected.startswith("inside .git/")
    assert preview("write_file", {"path": "notes.txt", "content": "x"}, str(tmp_path)).protected == ""
    assert preview("edit_file", {"path": ".git/config", "search_block": "a", "replace_block": "b"}, str(tmp_path)).error
