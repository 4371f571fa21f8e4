"""Checkpoints on real trees: pre-images kept before a mutation, bounded, restored through the executor."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import msgspec
import pytest

from dashfloat.executor import _changes
from dashfloat.executor._checkpoints import CheckpointStore, run_checkpointed, store_for, take_pre_image
from dashfloat.executor._limits import (
    CHECKPOINT_FILE_MAX_BYTES,
    CHECKPOINT_STORE_MAX_BYTES,
    COMMAND_CHANGES_MAX_PATHS,
    COMMAND_SCAN_MAX_FILES,
)
from dashfloat.executor._restore import apply_restore, preview_restore
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import (
    ABSENT_DIGEST,
    Checkpoint,
    EditFileArgs,
    EditFileResult,
    RestoreFile,
    ToolFailed,
    WriteFileArgs,
    WriteFileResult,
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def store_dir(tmp_path: Path) -> str:
    return str(tmp_path / "state" / "checkpoints" / "s1")


def as_restore(cp: Checkpoint) -> RestoreFile:
    return RestoreFile(
        path=cp.path,
        existed=cp.existed,
        expect=cp.after,
        before=cp.before,
        mode=cp.mode,
        created_dirs=cp.created_dirs,
        lost=cp.lost,
    )


def restore(root: Path, store_dir: str, cp: Checkpoint) -> str:
    """Preview then apply one checkpoint's restore; the preview's status."""
    file = as_restore(cp)
    (preview,) = preview_restore(str(root), store_dir, [file])
    if preview.status in ("restore", "delete"):
        (outcome,) = apply_restore(str(root), store_dir, [file], [preview.digest])
        assert outcome.ok, outcome.error
    return preview.status


def test_edit_is_undone_byte_for_byte_with_its_mode(root: Path, store_dir: str) -> None:
    target = root / "run.sh"
    original = b"#!/bin/sh\r\necho one\r\n\xff binary tail\n"
    target.write_bytes(original)
    target.chmod(0o751)
    done = run_checkpointed(EditFileArgs(path="run.sh", search_block="one", replace_block="two"), str(root), store_dir)
    assert isinstance(done.result, WriteFileResult | EditFileResult), done.result
    cp = done.checkpoint
    assert cp is not None and cp.existed and cp.mode == 0o751 and cp.before == sha(original)
    assert cp.after == sha(target.read_bytes()) != cp.before
    assert Path(store_dir, "objects", sha(original)).read_bytes() == original
    assert restore(root, store_dir, cp) == "restore"
    assert target.read_bytes() == original
    assert stat.S_IMODE(target.stat().st_mode) == 0o751


def test_write_that_created_a_file_is_undone_by_deleting_it_and_its_new_dirs(root: Path, store_dir: str) -> None:
    (root / "a").mkdir()
    done = run_checkpointed(WriteFileArgs(path="a/b/c/new.txt", content="hi\n"), str(root), store_dir)
    cp = done.checkpoint
    assert cp is not None and not cp.existed and cp.created_dirs == ["a/b/c", "a/b"]
    (preview,) = preview_restore(str(root), store_dir, [as_restore(cp)])
    assert preview.status == "delete" and "DashFloat created this file" in preview.lines[0]
    assert restore(root, store_dir, cp) == "delete"
    assert not (root / "a" / "b").exists() and (root / "a").is_dir()


def test_a_created_dir_that_gained_other_files_stays(root: Path, store_dir: str) -> None:
    done = run_checkpointed(WriteFileArgs(path="d/new.txt", content="x"), str(root), store_dir)
    assert done.checkpoint is not None
    (root / "d" / "mine.txt").write_text("user file\n")
    assert restore(root, store_dir, done.checkpoint) == "delete"
    assert (root / "d" / "mine.txt").read_text() == "user file\n" and not (root / "d" / "new.txt").exists()


def test_preview_is_the_reverse_diff(root: Path, store_dir: str) -> None:
    (root / "m.py").write_text("a = 1\nb = 2\n")
    done = run_checkpointed(WriteFileArgs(path="m.py", content="a = 1\nb = 3\n"), str(root), store_dir)
    assert done.checkpoint is not None
    (preview,) = preview_restore(str(root), store_dir, [as_restore(done.checkpoint)])
    assert preview.status == "restore"
    assert "-b = 3" in preview.lines and "+b = 2" in preview.lines


def test_a_file_changed_since_is_a_conflict_and_apply_checks_the_previewed_bytes(root: Path, store_dir: str) -> None:
    (root / "f.txt").write_text("v1\n")
    done = run_checkpointed(WriteFileArgs(path="f.txt", content="v2\n"), str(root), store_dir)
    assert done.checkpoint is not None
    (root / "f.txt").write_text("user's v3\n")
    file = as_restore(done.checkpoint)
    (preview,) = preview_restore(str(root), store_dir, [file])
    assert preview.status == "conflict" and "changed since DashFloat wrote it" in preview.reason
    assert (root / "f.txt").read_text() == "user's v3\n"
    # the user confirms that file: it is restored only if it is still what the preview showed
    (root / "f.txt").write_text("v4, typed after the preview\n")
    (outcome,) = apply_restore(str(root), store_dir, [file], [preview.digest])
    assert not outcome.ok and "changed since the preview" in outcome.error
    assert (root / "f.txt").read_text() == "v4, typed after the preview\n"
    (preview,) = preview_restore(str(root), store_dir, [file])
    (outcome,) = apply_restore(str(root), store_dir, [file], [preview.digest])
    assert outcome.ok and (root / "f.txt").read_text() == "v1\n"


def test_a_missing_or_corrupt_checkpoint_is_reported_by_path(root: Path, store_dir: str) -> None:
    (root / "a.txt").write_text("a1\n")
    (root / "b.txt").write_text("b1\n")
    cps = []
    for name in ("a.txt", "b.txt"):
        done = run_checkpointed(WriteFileArgs(path=name, content="new\n"), str(root), store_dir)
        assert done.checkpoint is not None
        cps.append(done.checkpoint)
    a_object = Path(store_dir, "objects", sha(b"a1\n"))
    b_object = Path(store_dir, "objects", sha(b"b1\n"))
    a_object.unlink()
    b_object.write_bytes(b"tampered")
    previews = preview_restore(str(root), store_dir, [as_restore(c) for c in cps])
    assert [p.status for p in previews] == ["missing", "missing"]
    assert previews[0].reason == f"checkpoint missing: {a_object}"
    assert previews[1].reason == f"checkpoint corrupt: {b_object} (its bytes do not match its name)"
    assert (root / "a.txt").read_text() == "new\n"


def test_files_over_the_per_file_cap_are_recorded_as_not_restorable(root: Path, store_dir: str) -> None:
    assert CHECKPOINT_FILE_MAX_BYTES == 16 * 1024 * 1024
    store = CheckpointStore(store_dir, file_max_bytes=10)
    (root / "big.txt").write_bytes(b"x" * 11)
    fixed = Root(str(root))
    pre = take_pre_image(fixed, "big.txt", store)
    assert pre is not None and pre.lost.startswith("the file was 11 bytes, over the 10 bytes per-file")
    assert pre.before is None and store.total_bytes == 0
    (root / "small.txt").write_bytes(b"x" * 10)
    small = take_pre_image(fixed, "small.txt", store)
    assert small is not None and small.lost == "" and store.total_bytes == 10


def test_the_real_per_file_cap_is_crossed(root: Path, store_dir: str) -> None:
    with open(root / "huge.bin", "wb") as f:
        f.truncate(CHECKPOINT_FILE_MAX_BYTES + 1)  # sparse: no 16 MiB written
    done = run_checkpointed(WriteFileArgs(path="huge.bin", content="small now\n"), str(root), store_dir)
    assert isinstance(done.result, WriteFileResult | EditFileResult) and done.checkpoint is not None
    assert "per-file checkpoint cap" in done.checkpoint.lost
    (preview,) = preview_restore(str(root), store_dir, [as_restore(done.checkpoint)])
    assert preview.status == "unrestorable" and "per-file checkpoint cap" in preview.reason


def test_store_cap_drops_the_oldest_with_a_notice_and_never_blocks(root: Path, store_dir: str) -> None:
    assert CHECKPOINT_STORE_MAX_BYTES == 256 * 1024 * 1024
    store = CheckpointStore(store_dir, max_bytes=250)
    notices = []
    for i in range(5):
        data = bytes([65 + i]) * 100
        notices.append(store.keep(data, sha(data)))
    assert notices[:2] == ["", ""]
    assert "passed its 250 bytes cap: dropped the 1 oldest pre-image (100 bytes)" in notices[2]
    assert store.total_bytes == 200
    kept = sorted(os.listdir(Path(store_dir, "objects")))
    assert kept == sorted([sha(b"D" * 100), sha(b"E" * 100)])
    # a fresh process (an executor restart) sees the same store
    assert CheckpointStore(store_dir, max_bytes=250).total_bytes == 200


def test_a_pre_image_larger_than_the_whole_store_is_dropped_the_write_goes_ahead(root: Path, tmp_path: Path) -> None:
    store_dir = str(tmp_path / "tiny")
    store_for(store_dir).max_bytes = 5
    (root / "f.txt").write_text("more than five bytes\n")
    done = run_checkpointed(WriteFileArgs(path="f.txt", content="new\n"), str(root), store_dir)
    assert isinstance(done.result, WriteFileResult | EditFileResult) and (root / "f.txt").read_text() == "new\n"
    assert done.checkpoint is not None and "could not be kept" in done.checkpoint.lost
    assert "the change went ahead and cannot be undone" in done.notice


def test_an_unwritable_store_never_blocks_the_mutation(root: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the store should be\n")
    (root / "f.txt").write_text("old\n")
    edit = EditFileArgs(path="f.txt", search_block="old", replace_block="new")
    done = run_checkpointed(edit, str(root), str(blocker))
    assert isinstance(done.result, WriteFileResult | EditFileResult) and (root / "f.txt").read_text() == "new\n"
    assert done.checkpoint is not None and done.checkpoint.lost.startswith("its pre-image could not be kept")
    assert done.notice.startswith("no checkpoint for f.txt")


def test_same_pre_image_is_stored_once(root: Path, store_dir: str) -> None:
    for _ in range(3):
        (root / "f.txt").write_text("same\n")
        run_checkpointed(WriteFileArgs(path="f.txt", content="other\n"), str(root), store_dir)
    assert os.listdir(Path(store_dir, "objects")) == [sha(b"same\n")]


def test_failed_mutation_has_no_checkpoint(root: Path, store_dir: str) -> None:
    (root / "f.txt").write_text("abc\n")
    edit = EditFileArgs(path="f.txt", search_block="zzz", replace_block="y")
    done = run_checkpointed(edit, str(root), store_dir)
    assert isinstance(done.result, ToolFailed) and done.checkpoint is None
    escaped = run_checkpointed(WriteFileArgs(path="../outside/x", content="y"), str(root), store_dir)
    assert isinstance(escaped.result, ToolFailed) and escaped.checkpoint is None


def test_restore_keeps_the_path_policy(root: Path, store_dir: str) -> None:
    forged = RestoreFile(path="../outside/secret.txt", existed=False, expect=ABSENT_DIGEST)
    (preview,) = preview_restore(str(root), store_dir, [forged])
    assert preview.status == "error" and "escapes the working directory" in preview.reason
    (outcome,) = apply_restore(str(root), store_dir, [forged], [sha(b"secret\n")])
    assert not outcome.ok and (root.parent / "outside" / "secret.txt").exists()


def test_command_changes_by_size_and_mtime(root: Path) -> None:
    (root / "keep.txt").write_text("k\n")
    (root / "edit.txt").write_text("e\n")
    (root / "gone.txt").write_text("g\n")
    (root / ".git").mkdir()
    before = _changes.snapshot(str(root))
    (root / "edit.txt").write_text("edited, longer\n")
    (root / "gone.txt").unlink()
    (root / "sub").mkdir()
    (root / "sub" / "new.txt").write_text("n\n")
    (root / ".git" / "index").write_text("ignored\n")
    changes = _changes.compare(before, _changes.snapshot(str(root)))
    assert changes.paths == ["edit.txt", "gone.txt", "sub/new.txt"] and changes.more == 0


def test_command_changes_are_bounded(root: Path) -> None:
    assert COMMAND_CHANGES_MAX_PATHS == 50 and COMMAND_SCAN_MAX_FILES == 10_000
    before = _changes.snapshot(str(root))
    for i in range(7):
        (root / f"f{i}").write_text("x")
    changes = _changes.compare(before, _changes.snapshot(str(root)), max_paths=5)
    assert len(changes.paths) == 5 and changes.more == 2
    too_many = _changes.snapshot(str(root), max_files=6)
    assert isinstance(too_many, str) and "more than 6 files" in too_many
    assert _changes.compare(too_many, {}).unknown == too_many


def test_restore_through_a_symlink_inside_the_tree_lands_on_its_target(root: Path, store_dir: str) -> None:
    (root / "real.txt").write_text("v1\n")
    (root / "link.txt").symlink_to("real.txt")
    done = run_checkpointed(WriteFileArgs(path="link.txt", content="v2\n"), str(root), store_dir)
    assert done.checkpoint is not None and done.checkpoint.path == "real.txt"
    assert restore(root, store_dir, done.checkpoint) == "restore"
    assert (root / "real.txt").read_text() == "v1\n" and (root / "link.txt").is_symlink()


def test_a_restore_never_follows_a_symlink_planted_out_of_the_tree(root: Path, store_dir: str) -> None:
    (root / "d").mkdir()
    done = run_checkpointed(WriteFileArgs(path="d/f.txt", content="mine\n"), str(root), store_dir)
    assert done.checkpoint is not None
    # the directory is swapped for a symlink to outside after DashFloat wrote into it
    (root / "d" / "f.txt").unlink()
    (root / "d").rmdir()
    (root / "d").symlink_to(root.parent / "outside")
    (preview,) = preview_restore(str(root), store_dir, [as_restore(done.checkpoint)])
    assert preview.status == "error" and "escapes the working directory" in preview.reason
    assert (root.parent / "outside" / "secret.txt").read_text() == "secret\n"


def test_a_forged_checkpoint_name_reads_nothing_outside_the_store(root: Path, store_dir: str) -> None:
    (root / "f.txt").write_text("now\n")
    forged = RestoreFile(path="f.txt", existed=True, expect="x", before="../../../outside/secret.txt", mode=0o644)
    (preview,) = preview_restore(str(root), store_dir, [forged])
    assert preview.status == "missing" and "is not a sha256 digest" in preview.reason
    assert (root / "f.txt").read_text() == "now\n"


def test_restore_previews_say_why_a_file_is_not_simply_restored(root: Path, store_dir: str) -> None:
    (root / "f.txt").write_text("v1\n")
    done = run_checkpointed(WriteFileArgs(path="f.txt", content="v2\n"), str(root), store_dir)
    assert done.checkpoint is not None
    file = as_restore(done.checkpoint)
    cases = [
        msgspec.structs.replace(file, interleaved=True),
        msgspec.structs.replace(file, before=None),
        msgspec.structs.replace(file, lost="over the per-file cap"),
        msgspec.structs.replace(file, path="."),
    ]
    assert [(p.status, p.reason) for p in preview_restore(str(root), store_dir, cases)] == [
        ("conflict", "changed by something other than DashFloat between its writes in these turns"),
        ("unrestorable", "no pre-image was recorded"),
        ("unrestorable", "over the per-file cap"),
        ("error", "the working directory itself is not a file: ."),
    ]
    (root / "f.txt").write_text("v1\n")
    (back,) = preview_restore(str(root), store_dir, [file])
    assert (back.status, back.reason) == ("unchanged", "already as it was before")
    (root / "f.txt").unlink()
    (gone,) = preview_restore(str(root), store_dir, [file])
    assert (gone.status, gone.reason, gone.lines) == ("conflict", "deleted since DashFloat wrote it", ["+v1"])
    assert not (root / "f.txt").exists()


def test_apply_reports_a_checkpoint_lost_after_the_preview_and_leaves_the_file(root: Path, store_dir: str) -> None:
    (root / "f.txt").write_text("v1\n")
    done = run_checkpointed(WriteFileArgs(path="f.txt", content="v2\n"), str(root), store_dir)
    assert done.checkpoint is not None and done.checkpoint.before is not None
    file = as_restore(done.checkpoint)
    (preview,) = preview_restore(str(root), store_dir, [file])
    assert preview.status == "restore"
    Path(store_dir, "objects", done.checkpoint.before).unlink()
    (outcome,) = apply_restore(str(root), store_dir, [file], [preview.digest])
    assert not outcome.ok and outcome.error.startswith("checkpoint missing: ")
    assert (root / "f.txt").read_text() == "v2\n"


def test_undoing_a_created_file_already_deleted_still_removes_its_new_dirs(root: Path, store_dir: str) -> None:
    done = run_checkpointed(WriteFileArgs(path="n/m/new.txt", content="x\n"), str(root), store_dir)
    assert done.checkpoint is not None
    file = as_restore(done.checkpoint)
    (root / "n" / "m" / "new.txt").unlink()
    (preview,) = preview_restore(str(root), store_dir, [file])
    assert (preview.status, preview.digest) == ("unchanged", ABSENT_DIGEST)
    (outcome,) = apply_restore(str(root), store_dir, [file], [preview.digest])
    assert outcome.ok and not (root / "n").exists()


@pytest.mark.parametrize("existed", [True, False])
def test_a_file_replaced_by_a_directory_is_named_and_left_alone(root: Path, store_dir: str, existed: bool) -> None:
    if existed:
        (root / "f.txt").write_text("v1\n")
    done = run_checkpointed(WriteFileArgs(path="f.txt", content="v2\n"), str(root), store_dir)
    assert done.checkpoint is not None
    (root / "f.txt").unlink()
    (root / "f.txt").mkdir()
    (root / "f.txt" / "inside").write_text("kept\n")
    file = as_restore(done.checkpoint)
    (preview,) = preview_restore(str(root), store_dir, [file])
    assert (preview.status, preview.reason) == ("error", "now a directory, not a file: not restored")
    assert preview.lines == []
    (outcome,) = apply_restore(str(root), store_dir, [file], [preview.digest])
    assert not outcome.ok
    assert (root / "f.txt" / "inside").read_text() == "kept\n"


def test_a_file_replaced_by_a_named_pipe_is_named(root: Path, store_dir: str) -> None:
    (root / "f.txt").write_text("v1\n")
    done = run_checkpointed(WriteFileArgs(path="f.txt", content="v2\n"), str(root), store_dir)
    assert done.checkpoint is not None
    (root / "f.txt").unlink()
    os.mkfifo(root / "f.txt")
    (preview,) = preview_restore(str(root), store_dir, [as_restore(done.checkpoint)])
    assert (preview.status, preview.reason) == ("error", "now a named pipe, not a file: not restored")
