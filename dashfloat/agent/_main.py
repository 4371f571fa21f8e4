"""The agent process's first act after the main process forks it: detach, fork its workers, serve the UI."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Final

import msgspec

from dashfloat.agent._options import AgentOptions
from dashfloat.agent._workers import AGENT_PROCESS_NAME, ForkWorkers
from dashfloat.procutil import become_child, become_subreaper, die_with_parent, set_name

AGENT_EXIT_SESSION_IN_USE: Final = 75
"""The agent's exit code when the session it was to resume is another process's (taken after the launch's check):
the main process names the holder and exits 2 (runtime/_agent_link.py). 75 is sysexits' "temporary failure"."""


def agent_process_main(conn: Connection, log_path: str, close_fds: list[int]) -> None:
    """Run one agent process on ``conn`` (its end of the UI's pipe) until Shutdown or the UI's death.

    The options are the pipe's first frame (``AgentOptions`` as JSON), not a fork argument: the main process forks
    us before it reads the configuration, so the LLM worker's imports and ours overlap that work (issue 19). Our
    core is imported before the options come: with a local plain-HTTP provider the worker no longer imports
    ``requests`` (ADR 0048), and the chain to the first request is the main process's way to the options, then ours
    to the window discovery (ADR 0049; ADR 0045 had moved the import after the options while the worker's
    ``requests`` was the chain). The executor needs the options (root, sandbox); the shell forks it once its first
    messages went out.
    """
    become_child(log_path, close_fds)
    die_with_parent()
    set_name(AGENT_PROCESS_NAME)
    # Above the executor (itself its commands' subreaper): what it leaves when it is SIGKILLed comes up to us, not
    # to init, and is killed before a fresh executor starts and when we stop (ADR 0057 §2).
    become_subreaper()
    workers = ForkWorkers("", 0.0, log_path, [conn.fileno()], own_strays=True)
    workers.prefork_llm()
    # Our core first, while the main process reads the configuration: once the options come, the window discovery
    # goes at once (ADR 0049). Then the executor's code, on a thread while we wait for the options and serve (the
    # executor is forked once our first messages went out): on a thread beside the core's import it would share our
    # GIL with it and slow it down.
    from dashfloat.agent._process import serve
    from dashfloat.sessions.log import SessionLocked  # the journal's, loaded by the core already

    workers.preload_executor()
    try:
        options_json = conn.recv_bytes()
    except (EOFError, OSError):
        # The main process gave up before it had options (a bad config, Ctrl-C): nothing was started yet.
        workers.abandon()
        return

    options = msgspec.json.decode(options_json, type=AgentOptions)
    workers.configure(options.cwd, options.exec_timeout_s, options.sandbox)
    try:
        serve(conn, options, workers)
    except SessionLocked:
        # Another process took the session between the launch's check and our lock: we say nothing on the pipe
        # and exit so; the main process names the holder and exits 2 (ADR 0078).
        workers.abandon()
        raise SystemExit(AGENT_EXIT_SESSION_IN_USE) from None
    finally:
        workers.kill_strays()  # the workers are stopped: an executor killed after its grace left its orphans to us
