"""The supervisor: starts the agent (which forks its two workers), runs the UI or the printer, stops all."""

from typing import TYPE_CHECKING

from dashfloat._startup.lazy import lazy_exports

if TYPE_CHECKING:
    from dashfloat.runtime._agent_link import MAX_RESTARTS, AgentProcess
    from dashfloat.runtime._run import run, start_agent
    from dashfloat.runtime.printer import Printer

__all__ = ["MAX_RESTARTS", "AgentProcess", "Printer", "run", "start_agent"]

__getattr__ = lazy_exports(
    __name__,
    {
        "MAX_RESTARTS": "_agent_link",
        "AgentProcess": "_agent_link",
        "run": "_run",
        "start_agent": "_run",
        "Printer": "printer",
    },
)
