"""The protocol's patch: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

import msgspec

from dashfloat.protocol._base import Message
from dashfloat.protocol._ui_to_agent import Shutdown

# ---------------------------------------------------------------- Main process <-> patch keeper (headless --patch)


class PatchedFile(msgspec.Struct, frozen=True):
    """One file a run changed, as its patch says: digests (None: absent at that end) and lines added and removed."""

    path: str
    """Relative to the working directory."""
    before_sha256: str | None
    after_sha256: str | None
    added: int = 0
    removed: int = 0
    binary: bool = False


class WritePatch(Message, frozen=True):
    """Write every change since the starting tree to ``path`` as one git patch; replies PatchWritten."""

    path: str


PatchToKeeper = WritePatch | Shutdown


class BaselineKept(Message, frozen=True):
    """The keeper holds the starting tree (``files`` files, ``size`` bytes), or ``error`` says why it cannot."""

    files: int = 0
    size: int = 0
    error: str = ""


class PatchWritten(Message, frozen=True):
    """WritePatch's reply: the files the patch changes and its size, or ``error`` (then nothing was written)."""

    files: list[PatchedFile] = []
    size: int = 0
    error: str = ""


KeeperToMain = BaselineKept | PatchWritten
