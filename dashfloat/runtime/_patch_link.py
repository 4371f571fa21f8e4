"""The main process's end of the patch keeper: a ``--patch`` run's starting tree, kept by a process of its own.

The keeper is executor code (the one kind of process that reads the workspace); the main process forks it before the
prompt is sent, waits for the baseline, and asks for the patch when the turn has ended (docs/decisions/0078).
"""

from __future__ import annotations

import contextlib
import os
from multiprocessing.connection import Connection
from typing import Final

from dashfloat._startup.fork import FORK, start_sharing
from dashfloat.channel import Channel, PeerDied, ProtocolError
from dashfloat.procutil import stop_process
from dashfloat.protocol import BaselineKept, KeeperToMain, PatchWritten, Shutdown, WritePatch

KEEPER_STOP_GRACE_S: Final = 0.3
KEEPER_PROCESS_NAME: Final = "dashfloat-patch"


def _keeper_main(conn: Connection, log_path: str, close_fds: list[int], root: str, skip: list[str]) -> None:
    from dashfloat.executor import serve_patch  # in the child: the main process never loads the executor's code
    from dashfloat.procutil import become_child, set_name

    become_child(log_path, close_fds)
    set_name(KEEPER_PROCESS_NAME)
    serve_patch(conn, root, skip)


def skipped_paths(root: str, paths: list[str | None]) -> list[str]:
    """Of ``paths`` (the patch file, the answer's file, the state directory), those inside ``root``, relative to it:
    what the run itself writes there is not the model's change."""
    skip = []
    real_root = os.path.realpath(root)
    for path in paths:
        if path:
            real = os.path.realpath(path)
            if os.path.commonpath([real_root, real]) == real_root and real != real_root:
                skip.append(os.path.relpath(real, real_root))
    return skip


class PatchKeeper:
    """Start the keeper (it keeps the tree at once); ``baseline`` waits for it, ``write`` asks for the patch."""

    def __init__(self, root: str, skip: list[str], log_path: str = "", close_fds: list[int] | None = None) -> None:
        ours, theirs = FORK.Pipe()
        self.process = FORK.Process(
            target=_keeper_main,
            args=(theirs, log_path, [ours.fileno(), *(close_fds or [])], root, skip),
            name=KEEPER_PROCESS_NAME,
        )
        start_sharing(self.process)  # frozen for its collector, our freed heap trimmed, as every child (issue 19)
        theirs.close()
        self.channel = Channel[KeeperToMain](ours, KeeperToMain, "patch->main")

    def _reply(self) -> KeeperToMain | str:
        try:
            return self.channel.recv()
        except (PeerDied, ProtocolError) as exc:
            return f"the patch process stopped ({exc})"

    def baseline(self) -> str:
        """Wait until the starting tree is kept; why it cannot be (empty: it is)."""
        reply = self._reply()
        if isinstance(reply, str):
            return reply
        return reply.error if isinstance(reply, BaselineKept) else "the patch process answered out of turn"

    def write(self, path: str) -> PatchWritten:
        """Write the run's changes to ``path`` and say what the patch holds (``error``: nothing written)."""
        with contextlib.suppress(PeerDied):
            self.channel.send(WritePatch(path=path))
        reply = self._reply()
        if isinstance(reply, str):
            return PatchWritten(error=reply)
        return (
            reply if isinstance(reply, PatchWritten) else PatchWritten(error="the patch process answered out of turn")
        )

    def stop(self) -> None:
        def ask(_: object) -> None:
            with contextlib.suppress(PeerDied):
                self.channel.send(Shutdown())

        stop_process(self.process, KEEPER_STOP_GRACE_S, ask=ask)
        self.channel.close()
