"""Fixtures shared by the end-to-end tests: a small working tree and an isolated environment."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from dashfloat.executor import _confine
from tests.e2e import isolated_environment
from tests.executor.conftest import EXIT_WAIT_S, within

# No timed assertions, hypothesis's included: its per-example deadline (200 ms) and its "too slow" health
# check fail a correct property on a loaded machine, so a property fails only on a counterexample.
settings.register_profile("dashfloat", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dashfloat")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A working directory with one small file, ``a.txt``."""
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    return root


@pytest.fixture
def isolated_env(tmp_path: Path) -> dict[str, str]:
    """The environment for a `dashfloat` subprocess: private XDG dirs, no provider from the developer's shell."""
    return isolated_environment(tmp_path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Property tests run untraced (docs/decisions/0020-coverage-floors.md).

    Hypothesis makes a great many Python calls of its own, and on this Python (3.11) coverage's tracer sees every
    call even in code it does not measure: a 1000-example property test ran three times slower under coverage and
    passed its 60 s timeout on a loaded machine. The lines they reach are reached by example tests too (the
    floors check it).
    """
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.no_cover)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Close the connections the in-process plain route kept for its next request (the process's own pool, ``PLAIN``,
    keeps them for the process's life): the test servers are gone, and the collector would close each at exit with a
    ResourceWarning."""
    plain = sys.modules.get("dashfloat.llm._plain")
    if plain is not None:
        plain.PLAIN.close_idle()


@pytest.fixture
def private_cgroups(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Commands' cgroups made by this test, and by the DashFloats it forks, go below cgroups of its own: an executor
    starting in another test at the same time sweeps its own cgroup's children (ADR 0062) and took the cgroups of
    gone owners a test had made on purpose (failed once in a CI-style run)."""
    made: dict[str, str] = {}
    private: list[str] = []
    for controller in _confine.CONTROLLERS:
        own = _confine._own_cgroup(controller)
        if own is None:
            continue
        path = os.path.join(own, f"private-test-{os.getpid()}")
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)
        if not own.startswith(os.path.join(_confine.CGROUP_ROOT, controller)):  # v2: its children need the controller
            try:
                Path(path, "cgroup.subtree_control").write_text(f"+{controller}")
                enabled = Path(path, "cgroup.subtree_control").read_text().split()
            except OSError:
                enabled = []
            if controller not in enabled:  # cannot be delegated below ours: the test uses our own, as before
                _confine._remove(path)
                path = own
        if path != own:
            private.append(path)
        made[controller] = path
    monkeypatch.setattr(_confine, "_own_cgroup", made.get)
    monkeypatch.setattr(_confine, "_swept", set())  # swept by an earlier test in this process: not for this one
    yield
    for path in private:  # never our own cgroup's other children: other tests' commands live there
        for child in os.listdir(path):
            if os.path.isdir(os.path.join(path, child)):
                _confine.kill_cgroup(os.path.join(path, child))
                within(functools.partial(_confine._remove, os.path.join(path, child)), EXIT_WAIT_S)
        within(functools.partial(_confine._remove, path), EXIT_WAIT_S)
