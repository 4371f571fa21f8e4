"""Pruning other sessions' checkpoint stores when all of them together pass CHECKPOINTS_TOTAL_MAX_BYTES (ADR 0070).

A pass runs when a session opens its store. It lists ``<state>/checkpoints`` once, orders the stores by last use (the
mtime of their ``objects`` directory: opening a store touches it, every new object changes it), walks them newest
first adding up sizes, and removes the store that passes the cap and every older one, oldest first: the same stores
as pruning oldest first until under the cap, without measuring the ones that go. It never touches the current store,
a store whose lock another process holds (a live session), or anything that is not a real directory shaped like a
store; a removed store is renamed away first (``.prune-*``, finished by a later pass if this one is killed) and leaves
``<id>.pruned`` behind, so an undo can say its checkpoints were pruned. Sizes are remembered in ``.sizes``, keyed by
the objects directory's mtime, so a pass measures only stores that changed; at most CHECKPOINTS_PRUNE_MAX_STORES are
measured or removed per pass. Every OSError skips one store (noted in the report); a pass never raises one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import shutil
import stat
import time
from typing import Literal

import msgspec

from dashfloat.executor._limits import (
    CHECKPOINT_LOCK_RETRY_S,
    CHECKPOINT_LOCK_TRIES,
    CHECKPOINTS_PRUNE_MAX_STORES,
    CHECKPOINTS_TOTAL_MAX_BYTES,
)

CHECKPOINTS_DIRNAME = "checkpoints"
"""The agent's ``<state>/checkpoints`` (agent/_journal.py): a pass runs only in a directory of this name."""
OBJECTS_DIRNAME = "objects"
LOCK_NAME = "lock"
PRUNED_SUFFIX = ".pruned"
TRASH_PREFIX = ".prune-"
SIZES_NAME = ".sizes"
# What sessions/log.py accepts as a session id: anything else in the directory is not a store.
_STORE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO planted as the lock never blocks the open


class PruneReport(msgspec.Struct):
    """What one pass did: stores removed (oldest first), bytes left, stores it looked into, what it skipped and why."""

    pruned: list[str] = msgspec.field(default_factory=list)
    kept_bytes: int = 0
    looked: int = 0
    unmeasured: int = 0
    """Stores whose size was unknown when the bound was reached: nothing older was decided this pass."""
    skipped: list[str] = msgspec.field(default_factory=list)
    trash: list[str] = msgspec.field(default_factory=list)
    """Stores renamed away (this pass's and an interrupted one's), for ``remove_trash``: the slow part, done apart."""


class _Store(msgspec.Struct):
    name: str
    last_use_ns: int


_Outcome = Literal["pruned", "kept", "later"]


class _Budget:
    """CHECKPOINTS_PRUNE_MAX_STORES distinct stores per pass; touching one again costs nothing."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: set[str] = set()

    def take(self, name: str) -> bool:
        if name in self.seen:
            return True
        if len(self.seen) >= self.limit:
            return False
        self.seen.add(name)
        return True


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _listed(top: int, current: str, report: PruneReport) -> tuple[list[_Store], list[str]]:
    """The stores (real directories named like a session with a real ``objects`` directory) and leftover trash."""
    stores: list[_Store] = []
    trash: list[str] = []
    with os.scandir(top) as entries:
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue  # a symlink is never followed, a file is never a store
                if entry.name.startswith(TRASH_PREFIX):
                    trash.append(entry.name)
                elif entry.name != current and _STORE_NAME_RE.fullmatch(entry.name):
                    objects = os.stat(f"{entry.name}/{OBJECTS_DIRNAME}", dir_fd=top, follow_symlinks=False)
                    if stat.S_ISDIR(objects.st_mode):
                        stores.append(_Store(entry.name, objects.st_mtime_ns))
            except FileNotFoundError:
                continue  # gone meanwhile, or a directory without objects: not a store
            except OSError as exc:
                report.skipped.append(f"{entry.name}: {_why(exc)}")
    return stores, trash


_SIZES = msgspec.json.Decoder(dict[str, tuple[int, int]])


def _read_sizes(top: int) -> dict[str, tuple[int, int]]:
    """``.sizes``: store name -> (objects mtime, bytes) as last measured; empty when absent or unreadable."""
    try:
        fd = os.open(SIZES_NAME, os.O_RDONLY | _FILE_FLAGS, dir_fd=top)
    except OSError:
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {}
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return _SIZES.decode(b"".join(chunks))
    except (OSError, msgspec.DecodeError):
        return {}
    finally:
        os.close(fd)


def _write_sizes(top: int, sizes: dict[str, tuple[int, int]]) -> None:
    """Replace ``.sizes`` atomically (a cache: no fsync; a lost or torn one costs one re-measure)."""
    temp = f"{SIZES_NAME}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, 0o600, dir_fd=top)
        try:
            os.write(fd, msgspec.json.encode(sizes))
        finally:
            os.close(fd)
        os.rename(temp, SIZES_NAME, src_dir_fd=top, dst_dir_fd=top)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=top)


def _measure(top: int, name: str) -> tuple[int, int]:
    """(objects mtime, bytes of its regular files), through descriptors that never follow a symlink."""
    store = os.open(name, _DIR_FLAGS, dir_fd=top)
    try:
        objects = os.open(OBJECTS_DIRNAME, _DIR_FLAGS, dir_fd=store)
    finally:
        os.close(store)
    try:
        mtime = os.fstat(objects).st_mtime_ns  # before the scan: an object added meanwhile invalidates this size
        total = 0
        with os.scandir(objects) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    total += st.st_size
        return mtime, total
    finally:
        os.close(objects)


class _Pass:
    """One pass's state: the directory's descriptor, the remembered sizes and the budget of stores looked into."""

    def __init__(self, top: int, max_stores: int, report: PruneReport) -> None:
        self.top = top
        self.budget = _Budget(max_stores)
        self.report = report
        self.sizes = _read_sizes(top)
        self.changed = False

    def size(self, store: _Store) -> int | None:
        """The store's bytes: remembered when its objects are unchanged, else measured; None past the budget."""
        known = self.sizes.get(store.name)
        if known is not None and known[0] == store.last_use_ns:
            return known[1]
        if not self.budget.take(store.name):
            return None
        try:
            mtime, size = _measure(self.top, store.name)
        except OSError as exc:
            self.report.skipped.append(f"{store.name}: {_why(exc)}")
            return 0
        self.sizes[store.name] = (mtime, size)
        self.changed = True
        return size

    def prune(self, name: str) -> _Outcome:
        """Remove one store unless it is in use: ``kept`` when live or failing, ``later`` past the budget."""
        if not self.budget.take(name):
            return "later"
        try:
            trash = _rename_away(self.top, name)
        except OSError as exc:
            self.report.skipped.append(f"{name}: {_why(exc)}")
            return "kept"
        if trash is None:
            return "kept"
        _leave_tombstone(self.top, name, self.report)
        self.report.trash.append(trash)
        self.report.pruned.append(name)
        self.sizes.pop(name, None)
        self.changed = True
        return "pruned"


def _rename_away(top: int, name: str) -> str | None:
    """Rename the store to fresh trash under its exclusive lock; None when a session holds it (or it moved)."""
    store = os.open(name, _DIR_FLAGS, dir_fd=top)
    try:
        lock = os.open(LOCK_NAME, os.O_RDWR | os.O_CREAT | _FILE_FLAGS, 0o600, dir_fd=store)
        try:
            if not stat.S_ISREG(os.fstat(lock).st_mode):
                raise OSError(0, "its lock is not a regular file")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # a live session holds it
            # Only a holder of this lock renames this directory: the name still being it is checked under the lock.
            here, opened = os.stat(name, dir_fd=top, follow_symlinks=False), os.fstat(store)
            if (here.st_dev, here.st_ino) != (opened.st_dev, opened.st_ino):
                return None  # renamed away by another pass, and the name reused
            trash = f"{TRASH_PREFIX}{secrets.token_hex(8)}"
            os.rename(name, trash, src_dir_fd=top, dst_dir_fd=top)
            return trash
        finally:
            os.close(lock)  # releases it: a session waiting on the old lock sees the store moved and makes a new one
    finally:
        os.close(store)


def _leave_tombstone(top: int, name: str, report: PruneReport) -> None:
    """``<id>.pruned``, whose mtime says when: an undo of that session names pruning, not a mysterious loss."""
    try:
        fd = os.open(f"{name}{PRUNED_SUFFIX}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _FILE_FLAGS, 0o600, dir_fd=top)
    except OSError as exc:
        report.skipped.append(f"{name}{PRUNED_SUFFIX}: {_why(exc)}")
        return
    try:
        os.write(fd, b"pruned: all sessions' checkpoints passed their total cap\n")
    except OSError as exc:
        report.skipped.append(f"{name}{PRUNED_SUFFIX}: {_why(exc)}")
    finally:
        os.close(fd)


def remove_trash(directory: str, names: list[str]) -> list[str]:
    """Remove the stores a pass renamed away; what could not be (a later pass tries again). Never raises."""
    notes: list[str] = []
    try:
        top = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return [f"{directory}: {_why(exc)}"]
    try:
        for name in names:
            # rmtree with dir_fd walks by descriptors and never follows a symlink (rmtree.avoids_symlink_attacks)
            shutil.rmtree(name, ignore_errors=True, dir_fd=top)
            with contextlib.suppress(OSError):
                os.stat(name, dir_fd=top, follow_symlinks=False)
                notes.append(f"{name}: not removed entirely (a later pass tries again)")
    finally:
        os.close(top)
    return notes


def prune_checkpoints(
    directory: str,
    current: str,
    current_bytes: int,
    total_max_bytes: int = CHECKPOINTS_TOTAL_MAX_BYTES,
    max_stores: int = CHECKPOINTS_PRUNE_MAX_STORES,
    remove: bool = True,
) -> PruneReport:
    """Prune other stores in ``directory``, least recently used first, until all fit under ``total_max_bytes``.

    Without ``remove`` the stores are only renamed away (pruned all the same: no session can open them again) and
    left in ``report.trash`` for the caller to remove off its own path.
    """
    report = PruneReport()
    try:
        top = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        report.skipped.append(f"{directory}: {_why(exc)}")
        return report
    try:
        stores, trash = _listed(top, current, report)
        one = _Pass(top, max_stores, report)
        _prune_over(one, stores, current_bytes, total_max_bytes)
        # an interrupted removal's leftovers, after this pass's own work
        report.trash.extend(name for name in trash if one.budget.take(name))
        report.looked = len(one.budget.seen)
        if one.changed:
            listed = {store.name for store in stores}
            _write_sizes(
                top, {name: v for name, v in one.sizes.items() if name in listed and name not in report.pruned}
            )
    except OSError as exc:
        report.skipped.append(f"{directory}: {_why(exc)}")
    finally:
        os.close(top)
    if remove:
        report.skipped.extend(remove_trash(directory, report.trash))
    return report


def _prune_over(one: _Pass, stores: list[_Store], current_bytes: int, total_max_bytes: int) -> None:
    newest_first = sorted(stores, key=lambda s: (s.last_use_ns, s.name), reverse=True)
    total = current_bytes
    sizes: dict[str, int] = {}
    cut = len(newest_first)
    for i, store in enumerate(newest_first):
        size = one.size(store)
        if size is None:
            one.report.unmeasured = len(newest_first) - i
            one.report.kept_bytes = total
            return  # the bound: what is older than an unmeasured store is decided by a later pass
        sizes[store.name] = size
        if total + size > total_max_bytes:
            cut = i
            break
        total += size
    # Everything from the store that passes the cap on goes, oldest first; one that cannot (live, an error) stays,
    # and its size then has newer stores go in its place.
    stuck = 0
    one.report.kept_bytes = total
    for store in reversed(newest_first[cut:]):
        outcome = one.prune(store.name)
        if outcome == "later":
            return  # the bound: the rest go in a later pass, still oldest first
        if outcome == "kept":
            size = sizes[store.name] if store.name in sizes else one.size(store)
            stuck += size or 0
    for store in reversed(newest_first[:cut]):
        if total + stuck <= total_max_bytes:
            break
        outcome = one.prune(store.name)
        if outcome == "later":
            break
        if outcome == "pruned":
            total -= sizes[store.name]
    one.report.kept_bytes = total + stuck


def pruned_at(store_dir: str) -> float | None:
    """When the store at ``store_dir`` was pruned (its tombstone's mtime), or None."""
    try:
        st = os.lstat(f"{store_dir.rstrip(os.sep)}{PRUNED_SUFFIX}")
    except OSError:
        return None
    return st.st_mtime if stat.S_ISREG(st.st_mode) else None


def hold_store(store_dir: str) -> int:
    """Make the store and take its shared lock for the process's life; the lock's fd, or -1 when it was not had.

    A pruner renames a store away only under the exclusive lock; after getting the shared one the lock file is checked
    to still be the store's, else the store was just pruned and a fresh one is made.
    """
    lock_path = os.path.join(store_dir, LOCK_NAME)
    for _ in range(CHECKPOINT_LOCK_TRIES):
        try:
            os.makedirs(os.path.join(store_dir, OBJECTS_DIRNAME), mode=0o700, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | _FILE_FLAGS, 0o600)
        except OSError:
            return -1  # not a directory, not writable: the store's writes fail the same way and say so
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            here, opened = os.stat(lock_path, follow_symlinks=False), os.fstat(fd)
            if (here.st_dev, here.st_ino) == (opened.st_dev, opened.st_ino):
                return fd
        except BlockingIOError:
            time.sleep(CHECKPOINT_LOCK_RETRY_S)  # a pruner is renaming it right now
        except OSError:
            pass  # renamed away between the lock and the check
        os.close(fd)
    return -1
