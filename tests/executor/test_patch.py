"""The --patch keeper: every kind of change, written as git writes it, applied by the real `git apply` to a copy of
the starting tree, reproduces the final tree byte for byte (modes and symlinks too); its bounds are crossed."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from dashfloat.executor._patch import (
    PATCH_BASELINE_MAX_BYTES,
    PATCH_BASELINE_MAX_FILES,
    Baseline,
    PatchRefused,
    quote_path,
    write_patch,
)
from dashfloat.runtime._patch_link import PatchKeeper, skipped_paths

State = dict[str, tuple[str, bytes]]


def state_of(root: Path) -> State:
    """Every file and symlink under ``root`` (``.git`` left out): its kind and exec bit, and its bytes or target."""
    found: State = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in [*filenames, *(d for d in dirnames if os.path.islink(os.path.join(dirpath, d)))]:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.fsencode(os.readlink(path)))
            else:
                found[rel] = ("exec" if st.st_mode & stat.S_IXUSR else "file", Path(path).read_bytes())
    return found


def git_apply(start: Path, patch: Path, into: Path) -> None:
    """A fresh copy of the starting tree, with the patch applied by git itself."""
    shutil.copytree(start, into, symlinks=True)
    subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=into, check=True, capture_output=True)


def keep(root: Path, **bounds: int) -> Baseline:
    return Baseline(
        str(root),
        frozenset(),
        bounds.get("max_files", PATCH_BASELINE_MAX_FILES),
        bounds.get("max_bytes", PATCH_BASELINE_MAX_BYTES),
    )


def test_every_kind_of_change_applies_with_git_and_reproduces_the_final_tree(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    files = {
        "edited.txt": b"".join(b"line %d\n" % i for i in range(40)),
        "no newline.txt": b"one\ntwo",
        "crlf.txt": b"a\r\nb\r\nc\r\n",
        "deleted.txt": b"bye\n",
        "deleted.bin": b"\0\1\2" * 50,
        "changed.bin": bytes(range(256)) * 40,
        "mode.sh": b"#!/bin/sh\n",
        "became link": b"text\n",
        'odd "name"\t\u00e9.txt': b"odd\n",
        "cr only.txt": b"x\ry\n",
    }
    for name, data in files.items():
        (root / name).write_bytes(data)
    os.symlink("edited.txt", root / "moved.link")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    start = tmp_path / "start"
    shutil.copytree(root, start, symlinks=True)
    with keep(root) as baseline:
        change_everything(root, files)
        patch = tmp_path / "run.patch"
        written = write_patch(baseline, str(patch))
    assert written.error == ""
    assert written.size == patch.stat().st_size
    by_path = {f.path: f for f in written.files}
    assert ".git/HEAD" not in by_path
    assert by_path["new/deep/made.txt"].before_sha256 is None and by_path["deleted.txt"].after_sha256 is None
    assert by_path["changed.bin"].binary and by_path["deleted.bin"].binary
    assert (by_path["edited.txt"].added, by_path["edited.txt"].removed) == (3, 2)
    text = patch.read_bytes()
    assert b"GIT binary patch" in text and b"deleted file mode 100644" in text and b"new mode 100755" in text

    git_apply(start, patch, tmp_path / "fresh")
    assert state_of(tmp_path / "fresh") == state_of(root)


def change_everything(root: Path, files: dict[str, bytes]) -> None:
    lines = files["edited.txt"].split(b"\n")
    lines[3], lines[30] = b"changed 3", b"changed 30"
    (root / "edited.txt").write_bytes(b"\n".join([*lines[:20], b"inserted", *lines[20:]]))
    (root / "no newline.txt").write_bytes(b"one\nTWO")
    (root / "crlf.txt").write_bytes(b"a\r\nB\r\nc\r\n")
    (root / "deleted.txt").unlink()
    (root / "deleted.bin").unlink()
    (root / "changed.bin").write_bytes(bytes(reversed(range(256))) * 41)
    os.chmod(root / "mode.sh", 0o755)
    (root / "became link").unlink()
    os.symlink("mode.sh", root / "became link")
    (root / 'odd "name"\t\u00e9.txt').write_bytes(b"odder\n")
    (root / "cr only.txt").write_bytes(b"x\ry\rz\n")
    os.unlink(root / "moved.link")
    os.symlink("crlf.txt", root / "moved.link")
    (root / "new" / "deep").mkdir(parents=True)
    (root / "new" / "deep" / "made.txt").write_bytes(b"fresh\n")
    (root / "new" / "empty.txt").write_bytes(b"")
    (root / "new" / "made.bin").write_bytes(b"\x89PNG\r\n\x1a\n\0\0" + os.urandom(3000))
    os.symlink("../edited.txt", root / "new" / "link")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/other\n")  # never in a patch


def test_a_run_that_changed_nothing_writes_an_empty_patch(tree: Path, tmp_path: Path) -> None:
    patch = tmp_path / "run.patch"
    patch.write_text("left from before\n")
    with keep(tree) as baseline:
        os.utime(tree / "a.txt")  # touched, not changed: not in the patch
        written = write_patch(baseline, str(patch))
    assert (written.files, written.size, written.error) == ([], 0, "")
    assert patch.read_bytes() == b""


def test_the_file_bound_is_crossed(tree: Path) -> None:
    (tree / "b.txt").write_text("b\n")
    with keep(tree, max_files=2) as baseline:
        assert len(baseline.items) == 2
    with pytest.raises(PatchRefused, match="more than 1 files"):
        keep(tree, max_files=1)


def test_the_byte_bound_is_crossed(tree: Path) -> None:
    size = (tree / "a.txt").stat().st_size
    with keep(tree, max_bytes=size) as baseline:
        assert baseline.size == size
    with pytest.raises(PatchRefused, match=f"more than {size - 1} bytes"):
        keep(tree, max_bytes=size - 1)


def test_a_tree_grown_past_its_bound_during_the_run_writes_no_patch(tree: Path, tmp_path: Path) -> None:
    with keep(tree, max_files=1) as baseline:
        (tree / "b.txt").write_text("b\n")
        written = write_patch(baseline, str(tmp_path / "run.patch"))
    assert "more than 1 files" in written.error and written.files == []
    assert not (tmp_path / "run.patch").exists()


def test_an_unwritable_patch_path_is_said(tree: Path, tmp_path: Path) -> None:
    with keep(tree) as baseline:
        written = write_patch(baseline, str(tmp_path / "no" / "such" / "dir" / "run.patch"))
    assert written.error.startswith("cannot write") and "No such file or directory" in written.error


def test_paths_are_quoted_as_git_quotes_them() -> None:
    assert quote_path("plain/name with space.txt") == "plain/name with space.txt"
    assert quote_path('a"b\\c\td\u00e9\x01') == '"a\\"b\\\\c\\td\\303\\251\\001"'


def test_the_keeper_process_keeps_the_tree_and_writes_the_patch(tree: Path, tmp_path: Path) -> None:
    start = tmp_path / "start"
    shutil.copytree(tree, start)
    patch = tree / "out" / "run.patch"  # inside the tree: the patch is not a change of its own
    patch.parent.mkdir()
    keeper = PatchKeeper(str(tree), skipped_paths(str(tree), [str(patch), None, str(tmp_path / "elsewhere")]))
    try:
        assert keeper.baseline() == ""
        (tree / "a.txt").write_text("changed\n")
        written = keeper.write(str(patch))
        assert [f.path for f in written.files] == ["a.txt"]
        assert keeper.write(str(patch)).files == written.files  # asked again: the same starting tree
    finally:
        keeper.stop()
    git_apply(start, patch, tmp_path / "fresh")
    assert state_of(tmp_path / "fresh") == {"a.txt": ("file", b"changed\n")}
    assert keeper.write(str(patch)).error.startswith("the patch process stopped")


def test_a_keeper_that_cannot_read_the_tree_says_why(tmp_path: Path) -> None:
    keeper = PatchKeeper(str(tmp_path / "gone"), [])
    try:
        assert keeper.baseline().startswith(f"cannot read the working directory {tmp_path / 'gone'}")
    finally:
        keeper.stop()


def test_only_paths_inside_the_tree_are_skipped(tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    assert skipped_paths(str(root), [str(root / "p.patch"), str(tmp_path / "x"), None, str(root)]) == ["p.patch"]
