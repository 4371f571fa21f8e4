"""The LLM process's stream threads: a stream runs on a kept thread when one is idle, never waits for a busy one."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from dashfloat.llm._stream import StreamThreads
from tests.e2e import wait_for

WAIT_S = 30.0


def recorded(ran_on: list[int], done: threading.Event, release: threading.Event | None = None) -> Callable[[], None]:
    """A stream's stand-in: notes its thread, waits for ``release`` if given, then sets ``done``."""

    def job() -> None:
        ran_on.append(threading.get_ident())
        if release is not None:
            assert release.wait(WAIT_S)
        done.set()

    return job


def test_streams_one_after_another_run_on_one_kept_thread() -> None:
    threads = StreamThreads()
    ran_on: list[int] = []
    for _ in range(3):
        done = threading.Event()
        threads.run(recorded(ran_on, done))
        assert done.wait(WAIT_S)
        assert wait_for(lambda: threads.idle == 1, WAIT_S)  # it counts itself idle once the job returned
    assert len(set(ran_on)) == 1 and threading.get_ident() not in ran_on


def test_a_stream_started_while_another_runs_gets_its_own_thread() -> None:
    threads = StreamThreads()
    ran_on: list[int] = []
    release = threading.Event()
    first, second, third = threading.Event(), threading.Event(), threading.Event()
    threads.run(recorded(ran_on, first, release))
    threads.run(recorded(ran_on, second))
    assert second.wait(WAIT_S)  # it did not wait for the first stream, still running
    assert not first.is_set()
    release.set()
    assert first.wait(WAIT_S)
    assert wait_for(lambda: threads.idle == 2, WAIT_S)
    threads.run(recorded(ran_on, third))
    assert third.wait(WAIT_S)
    assert len(ran_on) == 3 and len(set(ran_on)) == 2  # a kept thread took the third


def test_a_job_that_raises_leaves_its_thread_serving(capsys: pytest.CaptureFixture[str]) -> None:
    threads = StreamThreads()

    def broken() -> None:
        raise RuntimeError("boom")

    threads.run(broken)
    assert wait_for(lambda: threads.idle == 1, WAIT_S)
    done = threading.Event()
    ran_on: list[int] = []
    threads.run(recorded(ran_on, done))
    assert done.wait(WAIT_S)
    assert "RuntimeError: boom" in capsys.readouterr().err
