"""Run ``python -m dashfloat ARGS`` recording, in every process it starts, who imported each module.

``python tests/startup/recorder.py DIR ARGS...``: an import finder placed first records, for each module's first
import, the process that made it and the importer chain (the innermost frames outside the import system, as
``file:line``); forked children inherit the record. On SIGUSR1 a process writes its modules to ``DIR/<pid>``, one
``name<TAB>pid of the importing process<TAB>chain`` line each. Nothing is imported here that a start does not import
anyway (``os``, ``sys``, ``signal``, ``runpy``: ``-m`` runs through ``runpy`` too), so what it records is a start's.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
from types import FrameType
from typing import Any

CHAIN_FRAMES = 6
"""Frames kept of each importer chain: the importing line and who called it, enough to find who to change."""
_SKIPPED = ("<frozen ", os.path.join("importlib", "__init__.py"), __file__)

_who: dict[str, tuple[int, str]] = {}


def _where(filename: str) -> str:
    """A frame's file, short: from the package or stdlib directory on."""
    for marker in ("site-packages/", "/dashfloat/", "/lib/python3"):
        at = filename.rfind(marker)
        if at >= 0:
            short = filename[at + (0 if marker == "/dashfloat/" else len(marker)) :].lstrip("/")
            return short.partition("/")[2] if marker == "/lib/python3" else short  # "11/asyncio/…" -> "asyncio/…"
    return filename


def chain_of(frame: FrameType | None, frames: int = CHAIN_FRAMES) -> str:
    """The importer chain above ``frame``: ``file:line`` of each frame outside the import system, innermost first."""
    found: list[str] = []
    while frame is not None and len(found) < frames:
        filename = frame.f_code.co_filename
        if not any(skip in filename for skip in _SKIPPED):
            found.append(f"{_where(filename)}:{frame.f_lineno}")
        frame = frame.f_back
    return " <- ".join(found)


class Recorder:
    """A meta path finder that finds nothing: it notes who asked for each module first."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name not in _who:
            _who[name] = (os.getpid(), chain_of(sys._getframe(1)))


def dump(directory: str) -> None:
    """Write this process's modules, each with its importing process and chain, to ``directory/<pid>``."""
    lines = [f"{name}\t{_who.get(name, (0, ''))[0]}\t{_who.get(name, (0, ''))[1]}\n" for name in sorted(sys.modules)]
    path = os.path.join(directory, str(os.getpid()))
    fd = os.open(path + ".part", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, "".join(lines).encode())
    finally:
        os.close(fd)
    os.rename(path + ".part", path)  # whole or absent: the reader waits for the name


def main() -> None:
    directory = sys.argv[1]
    sys.argv = ["dashfloat", *sys.argv[2:]]
    sys.meta_path.insert(0, Recorder())
    signal.signal(signal.SIGUSR1, lambda signum, frame: dump(directory))
    runpy.run_module("dashfloat", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
