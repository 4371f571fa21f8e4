"""Restores: the reverse preview of an undo or rewind, and applying it with the tools' own guarantees.

A restore is an executor operation like any other: every path goes through the path policy, a file comes
back through the same atomic write (O_EXCL temp, fsync, rename) with the pre-image's mode, and nothing is
written over bytes other than the ones the preview was built from.
"""

from __future__ import annotations

import contextlib
import os

from dashfloat.executor._checkpoints import CheckpointStore, CheckpointUnavailable, store_for
from dashfloat.executor._errors import os_message
from dashfloat.executor._files import ABSENT_DIGEST, PlannedWrite, atomic_write, digest_of
from dashfloat.executor._limits import EDIT_MAX_FILE_BYTES
from dashfloat.executor._tools import diff_lines
from dashfloat.executor.path_policy import PathError, resolve
from dashfloat.protocol import RestoreFile, RestoreOutcome, RestorePreview


def _current_bytes(real: str) -> tuple[bytes | None, int | None]:
    """The bytes now at ``real`` (None when absent or too large to diff) and its size (None when absent)."""
    try:
        size = os.stat(real).st_size
    except FileNotFoundError:
        return None, None
    if size > EDIT_MAX_FILE_BYTES:
        return None, size
    with open(real, "rb") as f:
        return f.read(EDIT_MAX_FILE_BYTES + 1), size


def _conflict_reason(file: RestoreFile, current: str) -> str:
    if file.interleaved:
        return "changed by something other than DashFloat between its writes in these turns"
    if current == ABSENT_DIGEST:
        return "deleted since DashFloat wrote it"
    return "changed since DashFloat wrote it (by you, an editor or a command)"


def preview_one(root: str, store: CheckpointStore, file: RestoreFile) -> RestorePreview:
    """What restoring ``file`` would do now, and the diff from its current bytes back to the pre-image."""
    if file.lost:
        return RestorePreview(file.path, "unrestorable", reason=file.lost)
    try:
        real = resolve(file.path, root)
        current = digest_of(real)
    except (PathError, OSError) as exc:
        return RestorePreview(file.path, "error", reason=_error(exc, file.path))
    target = file.before if file.existed else ABSENT_DIGEST
    if target is None:
        return RestorePreview(file.path, "unrestorable", reason="no pre-image was recorded")
    if current == target:
        return RestorePreview(file.path, "unchanged", digest=current, reason="already as it was before")
    data = b""
    if file.existed:
        assert file.before is not None
        try:
            data = store.load(file.before)
        except CheckpointUnavailable as exc:
            return RestorePreview(file.path, "missing", reason=str(exc))
    try:
        old, old_size = _current_bytes(real)
    except OSError as exc:
        return RestorePreview(file.path, "error", reason=_error(exc, file.path))
    if file.existed:
        lines = diff_lines(PlannedWrite(real, old, old_size, data, file.mode, current))
    else:
        lines = [f"[delete: DashFloat created this file; {old_size or 0} bytes now]"]
    if current != file.expect or file.interleaved:
        return RestorePreview(file.path, "conflict", lines, current, _conflict_reason(file, current))
    return RestorePreview(file.path, "restore" if file.existed else "delete", lines, current)


def preview_restore(root: str, store_dir: str, files: list[RestoreFile]) -> list[RestorePreview]:
    """The reverse preview of every file, in the order given."""
    store = store_for(store_dir)
    return [preview_one(root, store, file) for file in files]


def _error(exc: Exception, path: str) -> str:
    if isinstance(exc, OSError):
        return os_message(exc, path)
    return str(exc)


def apply_one(root: str, store: CheckpointStore, file: RestoreFile, digest: str) -> RestoreOutcome:
    """Bring back ``file`` if its bytes are still ``digest`` (what the preview showed)."""
    try:
        real = resolve(file.path, root)
        if digest_of(real) != digest:
            return RestoreOutcome(file.path, False, "changed since the preview; not restored (run it again)")
        if file.existed:
            assert file.before is not None
            data = store.load(file.before)
            os.makedirs(os.path.dirname(real), exist_ok=True)
            atomic_write(real, data, file.mode if file.mode is not None else 0o644)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(real)
            _remove_created_dirs(root, file.created_dirs)
    except CheckpointUnavailable as exc:
        return RestoreOutcome(file.path, False, str(exc))
    except (PathError, OSError) as exc:
        return RestoreOutcome(file.path, False, _error(exc, file.path))
    return RestoreOutcome(file.path, True)


def _remove_created_dirs(root: str, created: list[str]) -> None:
    """Directories a write created, deepest first, removed when they are empty again (never otherwise)."""
    for rel in created:
        try:
            os.rmdir(resolve(rel, root))
        except (PathError, OSError):
            return  # not empty (or gone): its ancestors are not empty either


def apply_restore(root: str, store_dir: str, files: list[RestoreFile], digests: list[str]) -> list[RestoreOutcome]:
    """Restore every file in the order given (newest change first); each outcome says what happened."""
    store = store_for(store_dir)
    return [apply_one(root, store, file, digest) for file, digest in zip(files, digests, strict=True)]
