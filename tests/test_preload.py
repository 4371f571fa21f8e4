"""Importing modules on a thread (``dashfloat._startup.preload``): what it imports, how it reports the end and a
failure, and the switch interval it lowers only while it runs."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat._startup.preload import SWITCH_INTERVAL_WHILE_IMPORTING_S, Preload, PreloadFailed


@pytest.fixture
def modules(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A directory on sys.path and a unique prefix for the modules a test writes there."""
    prefix = f"preload_{uuid.uuid4().hex}"
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path, prefix
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.startswith(prefix)]:
            del sys.modules[name]


def test_the_modules_and_an_attribute_are_imported_and_the_end_is_readable(modules: tuple[Path, str]) -> None:
    where, prefix = modules
    (where / f"{prefix}_a.py").write_text("A = 1\n")
    lazy = "import sys\n\ndef __getattr__(name):\n    sys.modules[__name__].seen = name\n    return 2\n"
    (where / f"{prefix}_b.py").write_text(lazy)
    preload = Preload((f"{prefix}_a", f"{prefix}_b:lazy"), notify=True)
    assert select.select([preload.fileno()], [], [], 30)[0] == [preload.fileno()]
    preload.wait()
    assert preload.done()
    assert sys.modules[f"{prefix}_a"].A == 1
    assert sys.modules[f"{prefix}_b"].seen == "lazy"
    preload.close()


def test_a_failed_import_is_raised_by_wait(modules: tuple[Path, str]) -> None:
    where, prefix = modules
    (where / f"{prefix}_bad.py").write_text("raise RuntimeError('broken install')\n")
    preload = Preload((f"{prefix}_bad",), notify=True)
    with pytest.raises(PreloadFailed, match="broken install"):
        preload.wait()
    assert preload.done()
    assert select.select([preload.fileno()], [], [], 0)[0]  # the end is signalled on failure too
    preload.close()


_SWITCH_INTERVAL_SCRIPT = """
import os, sys
from dashfloat._startup.preload import Preload
where, name = sys.argv[1], sys.argv[2]
sys.path.insert(0, where)
fifo = os.path.join(where, "gate")
before = sys.getswitchinterval()
preload = Preload((name,))
during = sys.getswitchinterval()
with open(fifo, "w") as gate:
    gate.write("go")
preload.wait()
print(before, during, sys.getswitchinterval())
"""


def test_the_switch_interval_is_short_only_while_importing(modules: tuple[Path, str]) -> None:
    """In an interpreter of its own: the switch interval and sys.modules are the whole process's, and the pytest
    worker's other threads (a discovery thread that outlives its test) share both. In the worker, one CI-style run
    under heavy load saw the held module gone from sys.modules before its import ended (a KeyError the import system
    raised); nothing of this package removes it, and 1,500 runs of the same steps alone in a process never did."""
    where, prefix = modules
    os.mkfifo(where / "gate")
    (where / f"{prefix}_held.py").write_text(f"with open({str(where / 'gate')!r}) as gate:\n    gate.read()\n")
    run = subprocess.run(
        [sys.executable, "-c", _SWITCH_INTERVAL_SCRIPT, str(where), f"{prefix}_held"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    before, during, after = (float(word) for word in run.stdout.split())
    assert before > SWITCH_INTERVAL_WHILE_IMPORTING_S
    assert during == pytest.approx(SWITCH_INTERVAL_WHILE_IMPORTING_S)  # kept in µs
    assert after == before


def test_no_descriptor_without_notify() -> None:
    preload = Preload(())
    preload.wait()
    with pytest.raises(ValueError, match="without notify"):
        preload.fileno()
