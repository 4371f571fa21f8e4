"""`make eval`: DashFloat's task suite (bench/tasks/, Harbor's task format) run the way a user runs DashFloat.

- ``load_tasks(root, pattern)``: the tasks, each a ``Task`` read from its ``task.toml``, ``instruction.md``,
  ``environment/`` and ``solution/oracle.toml``.
- ``scripted_model(tasks, kind)``: a real HTTP server on 127.0.0.1 that plays the ``oracle`` (each task's solution
  as tool calls, then a final answer) or ``nothing`` (a model that answers without doing anything).
- ``run_task(task, agent)`` / ``run_suite(tasks, agent, jobs)``: copy the workspace, run
  ``dashfloat -p INSTRUCTION --json --approve all`` in it, grade it with the task's ``tests/test.sh`` outside DashFloat.
- ``read_events(text)``: episodes, tokens and outcome from the ``--json`` lines.
- ``results_section`` / ``update_results``: the table written to bench/eval-results.md.
"""

from bench.eval._oracle import ScriptedKind, scripted_model
from bench.eval._report import results_section, update_results
from bench.eval._run import (
    DEFAULT_TIMEOUT_S_CAP,
    KILL_GRACE_S,
    SETUP_TIMEOUT_S,
    TERM_GRACE_S,
    AgentCommand,
    Bounds,
    RunStats,
    TaskResult,
    read_events,
    run_suite,
    run_task,
)
from bench.eval._tasks import (
    DEFAULT_AGENT_TIMEOUT_S,
    DEFAULT_VERIFIER_TIMEOUT_S,
    TASKS_DIR,
    OracleCall,
    Task,
    TaskError,
    load_task,
    load_tasks,
)

__all__ = [
    "DEFAULT_AGENT_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S_CAP",
    "DEFAULT_VERIFIER_TIMEOUT_S",
    "KILL_GRACE_S",
    "SETUP_TIMEOUT_S",
    "TASKS_DIR",
    "TERM_GRACE_S",
    "AgentCommand",
    "Bounds",
    "OracleCall",
    "RunStats",
    "ScriptedKind",
    "Task",
    "TaskError",
    "TaskResult",
    "load_task",
    "load_tasks",
    "read_events",
    "results_section",
    "run_suite",
    "run_task",
    "scripted_model",
    "update_results",
]
