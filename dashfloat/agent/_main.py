"""The agent process's first act after the main process forks it: detach, fork its workers, serve the UI."""

from __future__ import annotations

from multiprocessing.connection import Connection

import msgspec

from dashfloat.agent._options import AgentOptions
from dashfloat.agent._workers import AGENT_PROCESS_NAME, ForkWorkers
from dashfloat.procutil import become_child, die_with_parent, set_name


def agent_process_main(conn: Connection, options_json: bytes, log_path: str, close_fds: list[int]) -> None:
    """Run one agent process on ``conn`` (its end of the UI's pipe) until Shutdown or the UI's death."""
    become_child(log_path, close_fds)
    die_with_parent()
    set_name(AGENT_PROCESS_NAME)
    options = msgspec.json.decode(options_json, type=AgentOptions)
    workers = ForkWorkers(options.cwd, options.exec_timeout_s, log_path, [conn.fileno()], options.sandbox)
    workers.prefork()  # first: the workers import requests and the tools while we import the core
    from dashfloat.agent._process import serve

    serve(conn, options, workers)
