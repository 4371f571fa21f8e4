"""Restores: the reverse preview of an undo or rewind, and applying it with the tools' own guarantees.

A restore is an executor operation like any other: every path is located beneath the root fixed at start
(the same ``Root`` every tool uses: openat2 where the kernel has it), a file comes back through the same
atomic write (O_EXCL temp, fsync, rename) with the pre-image's mode, and nothing is written over bytes
other than the ones the preview was built from.
"""

from __future__ import annotations

import os
import stat

from dashfloat.executor._checkpoints import CheckpointStore, CheckpointUnavailable, store_for
from dashfloat.executor._errors import os_message
from dashfloat.executor._files import ABSENT_DIGEST, PlannedWrite, _digest_at, _stat_at, atomic_write
from dashfloat.executor._limits import EDIT_MAX_FILE_BYTES
from dashfloat.executor._tools import as_root, diff_lines
from dashfloat.executor.path_policy import BadPath, PathError, Root
from dashfloat.protocol import RestoreFile, RestoreOutcome, RestorePreview


def _located(root: Root, path: str) -> bytes:
    located = root.locate(path)
    if located == b".":
        raise BadPath(f"the working directory itself is not a file: {path}")
    return located


def _current_bytes(root: Root, located: bytes) -> tuple[bytes | None, int | None]:
    """The bytes now there (None when absent or too large to diff) and the size (None when absent)."""
    st = _stat_at(root, located)
    if st is None:
        return None, None
    if st.st_size > EDIT_MAX_FILE_BYTES or not stat.S_ISREG(st.st_mode):
        return None, st.st_size
    with os.fdopen(root.open(located, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
        return f.read(EDIT_MAX_FILE_BYTES + 1), st.st_size


_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket"}


def _not_a_file(st: os.stat_result | None) -> str:
    """What the path is when it is there but not a regular file (``a directory``), else ``""``."""
    if st is None or stat.S_ISREG(st.st_mode):
        return ""
    return _KINDS.get(stat.S_IFMT(st.st_mode), "a device or special file")


def _conflict_reason(file: RestoreFile, current: str) -> str:
    if file.interleaved:
        return "changed by something other than DashFloat between its writes in these turns"
    if current == ABSENT_DIGEST:
        return "deleted since DashFloat wrote it"
    return "changed since DashFloat wrote it (by you, an editor or a command)"


def _error(exc: Exception, path: str) -> str:
    if isinstance(exc, OSError):
        return os_message(exc, path)
    return str(exc)


def preview_one(root: Root, store: CheckpointStore, file: RestoreFile) -> RestorePreview:
    """What restoring ``file`` would do now, and the diff from its current bytes back to the pre-image."""
    if file.lost:
        return RestorePreview(file.path, "unrestorable", reason=file.lost)
    target = file.before if file.existed else ABSENT_DIGEST
    if target is None:
        return RestorePreview(file.path, "unrestorable", reason="no pre-image was recorded")
    try:
        located = _located(root, file.path)
        current = _digest_at(root, located)
        if current == target:
            return RestorePreview(file.path, "unchanged", digest=current, reason="already as it was before")
        kind = _not_a_file(_stat_at(root, located))
        if kind:
            # undo writes or deletes files only: it never replaces what the path became
            return RestorePreview(file.path, "error", digest=current, reason=f"now {kind}, not a file: not restored")
        old, old_size = _current_bytes(root, located)
    except (PathError, OSError) as exc:
        return RestorePreview(file.path, "error", reason=_error(exc, file.path))
    if file.existed:
        assert file.before is not None
        try:
            data = store.load(file.before)
        except CheckpointUnavailable as exc:
            return RestorePreview(file.path, "missing", reason=str(exc))
        lines = diff_lines(PlannedWrite(located, old, old_size, data, file.mode, current))
    else:
        lines = [f"[delete: DashFloat created this file; {old_size or 0} bytes now]"]
    if current != file.expect or file.interleaved:
        return RestorePreview(file.path, "conflict", lines, current, _conflict_reason(file, current))
    return RestorePreview(file.path, "restore" if file.existed else "delete", lines, current)


def preview_restore(root: Root | str, store_dir: str, files: list[RestoreFile]) -> list[RestorePreview]:
    """The reverse preview of every file, in the order given."""
    store = store_for(store_dir)
    with as_root(root) as fixed:
        return [preview_one(fixed, store, file) for file in files]


def _unlink(root: Root, located: bytes) -> None:
    directory, name = root.parent(located, create=False)
    try:
        os.unlink(name, dir_fd=directory)
    except FileNotFoundError:
        pass
    finally:
        os.close(directory)


def _remove_created_dirs(root: Root, created: list[str]) -> None:
    """Directories a write created, deepest first, removed when they are empty again (never otherwise)."""
    for rel in created:
        try:
            directory, name = root.parent(_located(root, rel), create=False)
        except (PathError, OSError):
            return
        try:
            os.rmdir(name, dir_fd=directory)
        except OSError:
            return  # not empty (or gone): its ancestors are not empty either
        finally:
            os.close(directory)


def apply_one(root: Root, store: CheckpointStore, file: RestoreFile, digest: str) -> RestoreOutcome:
    """Bring back ``file`` if its bytes are still ``digest`` (what the preview showed)."""
    try:
        located = _located(root, file.path)
        if _digest_at(root, located) != digest:
            return RestoreOutcome(file.path, False, "changed since the preview; not restored (run it again)")
        if file.existed:
            assert file.before is not None
            data = store.load(file.before)
            atomic_write(root, located, data, file.mode if file.mode is not None else 0o644)
        else:
            _unlink(root, located)
            _remove_created_dirs(root, file.created_dirs)
    except CheckpointUnavailable as exc:
        return RestoreOutcome(file.path, False, str(exc))
    except (PathError, OSError) as exc:
        return RestoreOutcome(file.path, False, _error(exc, file.path))
    return RestoreOutcome(file.path, True)


def apply_restore(
    root: Root | str, store_dir: str, files: list[RestoreFile], digests: list[str]
) -> list[RestoreOutcome]:
    """Restore every file in the order given (newest change first); each outcome says what happened."""
    store = store_for(store_dir)
    with as_root(root) as fixed:
        return [apply_one(fixed, store, file, digest) for file, digest in zip(files, digests, strict=True)]
