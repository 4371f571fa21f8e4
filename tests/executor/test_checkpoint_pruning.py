"""The total cap on all sessions' checkpoint stores (ADR 0070): real stores in real directories, real locks, a real
process holding a store and killed with SIGKILL."""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.executor import _checkpoints
from dashfloat.executor._checkpoints import CheckpointStore, run_checkpointed, store_for
from dashfloat.executor._limits import (
    CHECKPOINT_LOCK_TRIES,
    CHECKPOINT_STORE_MAX_BYTES,
    CHECKPOINTS_PRUNE_MAX_STORES,
    CHECKPOINTS_TOTAL_MAX_BYTES,
)
from dashfloat.executor._prune import SIZES_NAME, hold_store, prune_checkpoints, remove_trash
from dashfloat.executor._restore import preview_restore
from dashfloat.protocol import RestoreFile, WriteFileArgs, WriteFileResult

T0 = 1_700_000_000  # the stores' last uses, in seconds: T0 + i is newer than T0


def sid(i: int) -> str:
    """A session id as sessions/log.py makes them; ids sort like ``i``."""
    return f"20240101-{i:06d}-abcdef"


@pytest.fixture
def checkpoints(tmp_path: Path) -> Path:
    directory = tmp_path / "state" / "checkpoints"
    directory.mkdir(parents=True)
    return directory


@pytest.fixture(autouse=True)
def no_stores_held() -> Iterator[None]:
    """Stores a test opened with store_for are released after it (the executor holds them until it exits)."""
    yield
    for store in _checkpoints._STORES.values():
        store.close()
    _checkpoints._STORES.clear()


def make_store(checkpoints: Path, name: str, size: int, last_use: int, sparse: bool = False) -> Path:
    """A store holding one object of ``size`` bytes, last used at ``last_use`` (its objects directory's mtime)."""
    objects = checkpoints / name / "objects"
    objects.mkdir(parents=True)
    if sparse:
        with open(objects / hashlib.sha256(name.encode()).hexdigest(), "wb") as f:
            f.truncate(size)  # the apparent size counts; no disk is used (nor is it hashed: nothing loads it)
    else:
        data = (name.encode() * (size // len(name) + 1))[:size]
        (objects / hashlib.sha256(data).hexdigest()).write_bytes(data)
    os.utime(objects, (last_use, last_use))
    return checkpoints / name


def left(checkpoints: Path) -> list[str]:
    """The stores there, and any trash a pass left."""
    return sorted(p.name for p in checkpoints.iterdir() if p.is_dir() and not p.is_symlink())


def test_crossing_the_total_cap_prunes_the_oldest_first_and_stops_under_it(checkpoints: Path) -> None:
    for i in range(10):
        make_store(checkpoints, sid(i), 100, T0 + i)
    # the current store is the least recently used of all by its mtime: it is never a candidate
    make_store(checkpoints, "current", 50, T0 - 100)
    report = prune_checkpoints(str(checkpoints), "current", 50, total_max_bytes=450)
    # 50 + the four newest (400) fit; one more would not
    assert report.pruned == [sid(i) for i in range(6)]
    assert left(checkpoints) == [sid(i) for i in range(6, 10)] + ["current"]
    assert report.kept_bytes == 450 and report.skipped == []
    for i in range(6):
        assert (checkpoints / f"{sid(i)}.pruned").is_file()
    assert not [p for p in checkpoints.iterdir() if p.name.startswith(".prune-")]
    # under the cap now: the next pass removes nothing and measures nothing (the sizes are remembered)
    again = prune_checkpoints(str(checkpoints), "current", 50, total_max_bytes=450)
    assert (again.pruned, again.looked, again.kept_bytes) == ([], 0, 450)


def test_the_order_is_the_last_use_not_the_name(checkpoints: Path) -> None:
    make_store(checkpoints, sid(1), 100, T0 + 5)  # created first, used last (a resumed session)
    make_store(checkpoints, sid(2), 100, T0 + 1)
    make_store(checkpoints, sid(3), 100, T0 + 2)
    report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=250)
    assert report.pruned == [sid(2)] and left(checkpoints) == [sid(1), sid(3)]


def test_under_the_cap_nothing_is_pruned(checkpoints: Path) -> None:
    for i in range(3):
        make_store(checkpoints, sid(i), 100, T0 + i)
    report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=300)
    assert report.pruned == [] and report.kept_bytes == 300 and len(left(checkpoints)) == 3


def test_a_store_locked_by_another_session_is_kept_and_newer_ones_go_in_its_place(checkpoints: Path) -> None:
    for i in range(4):
        make_store(checkpoints, sid(i), 100, T0 + i)
    held = hold_store(
        str(checkpoints / sid(0))
    )  # the oldest, in use (another open file description: a lock of its own)
    assert held >= 0
    try:
        report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=250)
    finally:
        os.close(held)
    # oldest first: sid(0) is live and stays; sid(1) goes, then sid(2) too, since sid(0) still counts
    assert report.pruned == [sid(1), sid(2)] and left(checkpoints) == [sid(0), sid(3)]
    assert report.kept_bytes == 200


def start_session_holding(store: Path) -> subprocess.Popen[str]:
    """A real process that opens ``store`` as an executor does and keeps it until killed."""
    code = (
        "import sys\n"
        "from dashfloat.executor._checkpoints import store_for\n"
        f"assert store_for({str(store)!r}).locked\n"
        "print('holding', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
    return proc


def test_a_live_session_is_never_pruned_and_a_sigkilled_one_does_not_stay_unprunable(checkpoints: Path) -> None:
    for i in range(3):
        make_store(checkpoints, sid(i), 100, T0 + i)
    proc = start_session_holding(checkpoints / sid(0))
    try:
        os.utime(checkpoints / sid(0) / "objects", (T0, T0))  # opening made it the newest; make it the oldest again
        report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=150)
        assert report.pruned == [sid(1), sid(2)] and left(checkpoints) == [sid(0)]
        make_store(checkpoints, sid(3), 100, T0 + 3)
        os.kill(proc.pid, signal.SIGKILL)  # no teardown runs: the kernel drops the lock with the process
        assert proc.wait() == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.stdout.close()
    report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=150)
    assert report.pruned == [sid(0)] and left(checkpoints) == [sid(3)]


def test_the_current_store_is_never_pruned_even_alone_over_the_cap(checkpoints: Path) -> None:
    make_store(checkpoints, "current", 500, T0)
    make_store(checkpoints, sid(1), 100, T0 + 1)
    report = prune_checkpoints(str(checkpoints), "current", 500, total_max_bytes=250)
    assert report.pruned == [sid(1)] and left(checkpoints) == ["current"]


def test_symlinks_are_never_followed(checkpoints: Path, tmp_path: Path) -> None:
    outside = make_store(tmp_path / "outside", sid(0), 1000, T0 - 10)  # shaped like an old store, but elsewhere
    secret = tmp_path / "secret.txt"
    secret.write_text("keep me\n")
    (checkpoints / sid(0)).symlink_to(outside)  # an entry that is a symlink
    linked_objects = checkpoints / sid(1)
    linked_objects.mkdir()
    (linked_objects / "objects").symlink_to(outside / "objects")  # a store whose objects are a symlink
    os.utime(outside / "objects", (T0 - 10, T0 - 10))
    real = make_store(checkpoints, sid(2), 100, T0 + 2)
    (real / "objects" / ("0" * 64)).symlink_to(secret)  # an object that is a symlink
    os.utime(real / "objects", (T0 + 2, T0 + 2))
    (checkpoints / ".prune-planted").symlink_to(outside)  # trash that is a symlink
    (checkpoints / f"{sid(3)}.pruned").symlink_to(secret)  # a tombstone planted as a symlink
    make_store(checkpoints, sid(3), 100, T0 + 3)
    make_store(checkpoints, sid(4), 100, T0 + 4)
    report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=150)
    assert report.pruned == [sid(2), sid(3)]
    assert report.skipped == [f"{sid(3)}.pruned: Too many levels of symbolic links"]
    assert secret.read_text() == "keep me\n" and (checkpoints / f"{sid(3)}.pruned").is_symlink()
    assert len(os.listdir(outside / "objects")) == 1 and (outside / "objects").is_dir()
    assert (checkpoints / sid(0)).is_symlink() and (checkpoints / ".prune-planted").is_symlink()
    assert (linked_objects / "objects").is_symlink()


def test_entries_that_are_not_stores_are_left_alone(checkpoints: Path) -> None:
    (checkpoints / sid(0)).write_text("a file named like a session\n")
    (checkpoints / sid(1)).mkdir()  # a directory without objects
    (checkpoints / "not a session id").mkdir()
    make_store(checkpoints, "-odd", 100, T0)  # a name sessions/log.py would refuse
    make_store(checkpoints, sid(2), 100, T0 + 2)
    make_store(checkpoints, sid(3), 100, T0 + 3)
    report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=150)
    assert report.pruned == [sid(2)]
    assert (checkpoints / sid(0)).read_text() == "a file named like a session\n"
    assert left(checkpoints) == ["-odd", sid(1), sid(3), "not a session id"]


@pytest.mark.parametrize(("lock", "why"), [("directory", "Is a directory"), ("fifo", "its lock is not a regular file")])
def test_an_oserror_skips_that_store_and_the_next_goes_in_its_place(checkpoints: Path, lock: str, why: str) -> None:
    broken = make_store(checkpoints, sid(0), 100, T0)
    if lock == "directory":
        (broken / "lock").mkdir()  # its lock cannot be opened: EISDIR, for root too
    else:
        os.mkfifo(broken / "lock")  # opened without blocking, then refused
    os.utime(broken / "objects", (T0, T0))
    make_store(checkpoints, sid(1), 100, T0 + 1)
    make_store(checkpoints, sid(2), 100, T0 + 2)
    report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=150)
    assert report.skipped == [f"{sid(0)}: {why}"]
    # oldest first until under the cap: sid(0) cannot go but still counts, so both newer ones go
    assert report.pruned == [sid(1), sid(2)] and left(checkpoints) == [sid(0)]
    assert report.kept_bytes == 100


def test_a_missing_or_unreadable_directory_is_a_report_not_an_error(tmp_path: Path) -> None:
    report = prune_checkpoints(str(tmp_path / "nowhere"), "current", 0)
    assert report.pruned == [] and report.skipped == [f"{tmp_path / 'nowhere'}: No such file or directory"]
    (tmp_path / "file").write_text("x")
    assert prune_checkpoints(str(tmp_path / "file"), "current", 0).skipped == [f"{tmp_path / 'file'}: Not a directory"]


def test_one_pass_looks_at_no_more_than_the_bound_and_the_next_goes_on(checkpoints: Path) -> None:
    assert CHECKPOINTS_PRUNE_MAX_STORES == 32
    for i in range(6):
        make_store(checkpoints, sid(i), 100, T0 + i)
    passes = [prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=250, max_stores=3) for _ in range(4)]
    assert [p.looked for p in passes] == [3, 3, 1, 0]
    # the first pass measures the three newest (the third passes the cap) and has nothing left to remove with;
    # the next ones remove oldest first, three and then one at a time
    assert [p.pruned for p in passes] == [[], [sid(0), sid(1), sid(2)], [sid(3)], []]
    assert left(checkpoints) == [sid(4), sid(5)]


def test_the_bound_leaves_older_stores_undecided_while_a_newer_size_is_unknown(checkpoints: Path) -> None:
    for i in range(5):
        make_store(checkpoints, sid(i), 100, T0 + i)
    first = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=250, max_stores=2)
    assert (first.pruned, first.looked, first.unmeasured) == ([], 2, 3)
    second = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=250, max_stores=2)
    assert (second.pruned, second.looked) == ([sid(0)], 2)  # sid(2) measured (passes the cap), sid(0) removed


def test_remembered_sizes_are_measured_again_when_a_store_changes(checkpoints: Path) -> None:
    a = make_store(checkpoints, sid(0), 100, T0)
    make_store(checkpoints, sid(1), 100, T0 + 1)
    assert prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=1000).looked == 2
    assert prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=1000).looked == 0
    (a / "objects" / ("1" * 64)).write_bytes(b"x" * 900)  # its session was resumed and kept a big pre-image
    again = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=1000)
    # measured again (1000 bytes, the newest now), and the other one removed: 1000 + 100 pass the cap
    assert (again.looked, again.pruned) == (2, [sid(1)])


@pytest.mark.parametrize("planted", ["garbage", "symlink", "directory"])
def test_a_bad_sizes_file_costs_a_measure_and_nothing_else(checkpoints: Path, tmp_path: Path, planted: str) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    sizes = checkpoints / SIZES_NAME
    if planted == "garbage":
        sizes.write_text("not json")
    elif planted == "symlink":
        sizes.symlink_to(target)
    else:
        sizes.mkdir()
    make_store(checkpoints, sid(0), 100, T0)
    report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=1000)
    assert report.looked == 1 and report.pruned == []
    assert target.read_text() == "{}"  # a symlink is replaced, never written through
    if planted != "directory":
        assert prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=1000).looked == 0


def test_without_remove_a_pass_only_renames_stores_away(checkpoints: Path, tmp_path: Path) -> None:
    make_store(checkpoints, sid(0), 100, T0)
    make_store(checkpoints, sid(1), 100, T0 + 1)
    report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=150, remove=False)
    (trash,) = report.trash
    assert report.pruned == [sid(0)] and left(checkpoints) == [trash, sid(1)]
    assert (checkpoints / trash / "objects").is_dir() and trash.startswith(".prune-")
    assert remove_trash(str(checkpoints), report.trash) == [] and not (checkpoints / trash).exists()
    assert remove_trash(str(tmp_path / "nowhere"), [trash]) == [f"{tmp_path / 'nowhere'}: No such file or directory"]


def test_an_interrupted_pass_leaves_trash_the_next_one_removes(checkpoints: Path) -> None:
    trash = make_store(checkpoints, ".prune-0123456789abcdef", 100, T0)
    report = prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=1000)
    assert not trash.exists() and report.looked == 1


def test_opening_a_store_holds_it_prunes_others_and_the_first_write_says_so(checkpoints: Path, tmp_path: Path) -> None:
    """The real cap, crossed with sparse objects: nine full stores of 255 MiB pass 2 GiB; the oldest goes."""
    assert CHECKPOINTS_TOTAL_MAX_BYTES == 8 * CHECKPOINT_STORE_MAX_BYTES == 2 * 1024**3
    size = 255 * 1024 * 1024
    for i in range(9):
        make_store(checkpoints, sid(i), size, T0 + i, sparse=True)
    root = tmp_path / "work"
    root.mkdir()
    current = str(checkpoints / "20990101-000000-cccccc")
    done = run_checkpointed(WriteFileArgs(path="new.txt", content="hi\n"), str(root), current)
    assert isinstance(done.result, WriteFileResult)
    assert done.notice == (
        "all sessions' checkpoints passed their 2048 MiB cap: pruned those of the 1 least recently used other "
        "session; the changes they recorded can no longer be undone"
    )
    store = store_for(current)
    assert store.locked
    store.close()  # waits for the removal, which runs beside the write (its trash may still be there before)
    assert [p.name for p in checkpoints.iterdir() if p.name.startswith(".prune-")] == []
    assert left(checkpoints) == [*(sid(i) for i in range(1, 9)), "20990101-000000-cccccc"]
    # the notice is said once
    again = run_checkpointed(WriteFileArgs(path="new.txt", content="ho\n"), str(root), current)
    assert again.notice == ""


def test_undo_of_a_pruned_session_says_its_checkpoints_were_pruned(checkpoints: Path, tmp_path: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (root / "f.txt").write_text("v1\n")
    old = str(checkpoints / sid(0))
    done = run_checkpointed(WriteFileArgs(path="f.txt", content="v2\n"), str(root), old)
    assert done.checkpoint is not None and done.checkpoint.before is not None
    store_for(old).close()  # that session ended
    os.utime(Path(old, "objects"), (T0, T0))
    make_store(checkpoints, sid(1), 100, T0 + 1)
    assert prune_checkpoints(str(checkpoints), "current", 0, total_max_bytes=100).pruned == [sid(0)]
    _checkpoints._STORES.clear()  # the session is resumed in a new executor
    cp = done.checkpoint
    file = RestoreFile(cp.path, cp.existed, cp.after, cp.before, cp.mode)
    (preview,) = preview_restore(str(root), old, [file])
    assert preview.status == "missing"
    assert preview.reason.startswith("checkpoint pruned: this session's checkpoints were removed on ")
    assert preview.reason.endswith(
        ", when all sessions' checkpoints passed their 2048 MiB cap (the least recently used sessions' go first)"
    )
    assert (root / "f.txt").read_text() == "v2\n"


def test_a_store_elsewhere_never_prunes_its_siblings(tmp_path: Path) -> None:
    make_store(tmp_path, sid(0), 100, T0)
    store = CheckpointStore(str(tmp_path / sid(1)), max_bytes=10)
    assert store.open() is None and store.locked
    store.close()
    assert (tmp_path / sid(0) / "objects").is_dir()


def test_a_store_that_is_a_file_never_fails_the_write_and_others_are_still_pruned(
    checkpoints: Path, tmp_path: Path
) -> None:
    for i in range(9):
        make_store(checkpoints, sid(i), 255 * 1024 * 1024, T0 + i, sparse=True)
    blocker = checkpoints / sid(99)
    blocker.write_text("a file where the store should be\n")
    report = CheckpointStore(str(blocker)).open()
    assert report is not None and report.pruned == [sid(0)]
    root = tmp_path / "work"
    root.mkdir()
    (root / "f.txt").write_text("old\n")
    done = run_checkpointed(WriteFileArgs(path="f.txt", content="new\n"), str(root), str(blocker))
    assert isinstance(done.result, WriteFileResult) and (root / "f.txt").read_text() == "new\n"
    assert done.checkpoint is not None and "could not be kept" in done.checkpoint.lost
    assert not store_for(str(blocker)).locked


def test_opening_gives_up_on_the_lock_after_the_tries_and_goes_on(checkpoints: Path, tmp_path: Path) -> None:
    assert CHECKPOINT_LOCK_TRIES == 20
    store = make_store(checkpoints, sid(0), 10, T0)
    fd = os.open(store / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held by something that is not a pruner and never lets go
        root = tmp_path / "work"
        root.mkdir()
        done = run_checkpointed(WriteFileArgs(path="n.txt", content="x\n"), str(root), str(store))
        assert isinstance(done.result, WriteFileResult) and done.checkpoint is not None
        assert not store_for(str(store)).locked
    finally:
        os.close(fd)


def test_a_store_renamed_away_by_a_pass_is_made_again_on_opening(checkpoints: Path) -> None:
    store = make_store(checkpoints, sid(0), 10, T0)
    os.rename(store, checkpoints / ".prune-gone")  # what a pass does to it, just before the lock is taken
    fd = hold_store(str(store))
    try:
        assert fd >= 0 and (store / "objects").is_dir() and os.listdir(store / "objects") == []
    finally:
        os.close(fd)
