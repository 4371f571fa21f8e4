"""The agent process's first act after the main process forks it: detach, fork its workers, serve the UI."""

from __future__ import annotations

from multiprocessing.connection import Connection

import msgspec

from dashfloat.agent._options import AgentOptions
from dashfloat.agent._workers import AGENT_PROCESS_NAME, ForkWorkers
from dashfloat.procutil import become_child, die_with_parent, set_name


def agent_process_main(conn: Connection, log_path: str, close_fds: list[int]) -> None:
    """Run one agent process on ``conn`` (its end of the UI's pipe) until Shutdown or the UI's death.

    The options are the pipe's first frame (``AgentOptions`` as JSON), not a fork argument: the main process forks
    us before it reads the configuration, so the LLM worker's imports (its HTTP stack, the longest of all) overlap
    that work (issue 19). Our own code is imported once the options came, not before: until then the main process
    and the LLM worker keep both cores busy, and a third process importing only slowed the worker, the first
    request's critical path (ADR 0045). The executor needs the options (root, sandbox); the shell forks it once its
    first messages went out (the window discovery is on the first request's path, the executor is not).
    """
    become_child(log_path, close_fds)
    die_with_parent()
    set_name(AGENT_PROCESS_NAME)
    workers = ForkWorkers("", 0.0, log_path, [conn.fileno()])
    workers.prefork_llm()
    # The executor's code imports on a thread while we wait for the options (the executor is forked once they came
    # and our first messages went out), so it is ready long before the first tool call (ADR 0045).
    workers.preload_executor()
    try:
        options_json = conn.recv_bytes()
    except (EOFError, OSError):
        # The main process gave up before it had options (a bad config, Ctrl-C): nothing was started yet.
        workers.abandon()
        return
    from dashfloat.agent._process import serve  # the core, once the main process's own start-up work is done

    options = msgspec.json.decode(options_json, type=AgentOptions)
    workers.configure(options.cwd, options.exec_timeout_s, options.sandbox)
    serve(conn, options, workers)
