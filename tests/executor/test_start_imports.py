"""The executor imports nothing after its fork: what it imports at start comes with the executor's code, which the
agent imports before forking it (ADR 0045), so the pages are shared rather than copied into both (issue 19, ADR
0046). In a fresh interpreter: the test process has imported everything long ago."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import dashfloat

CHECKOUT = str(Path(dashfloat.__file__).resolve().parent.parent)


def test_an_executor_starting_with_a_sandbox_imports_nothing_beyond_the_executors_code(tmp_path: Path) -> None:
    code = f"""
        import importlib, multiprocessing, sys
        from dashfloat.agent._workers import EXECUTOR_CODE
        from dashfloat.channel import Channel
        from dashfloat.protocol import AgentToExecutor, SandboxState, Shutdown
        for name in EXECUTOR_CODE:  # as the agent's preload imports them
            module, _, attribute = name.partition(":")
            imported = importlib.import_module(module)
            if attribute:
                getattr(imported, attribute)
        before = set(sys.modules)
        ours, theirs = multiprocessing.Pipe()
        Channel(ours, AgentToExecutor, "test").send(Shutdown())  # it starts, then stops at once
        from dashfloat.executor import serve
        serve(theirs, {str(tmp_path)!r}, 10.0, SandboxState(mode="workspace-write"))
        print(sorted(set(sys.modules) - before))
        """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[]"


def test_the_agent_builds_both_of_the_executors_decoders_before_forking_it(tmp_path: Path) -> None:
    code = f"""
        from dashfloat.agent._workers import ForkWorkers
        from dashfloat.protocol import AgentToExecutor, ExecutorToAgent, msgpack_decoder
        worker = ForkWorkers({str(tmp_path)!r}, 10.0, log_path="", held_fds=[]).start_executor()
        worker.stop()
        hits = msgpack_decoder.cache_info().hits
        msgpack_decoder(AgentToExecutor)  # the executor's, which the agent never decodes itself
        msgpack_decoder(ExecutorToAgent)
        print(msgpack_decoder.cache_info().hits - hits)
        """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2"]
