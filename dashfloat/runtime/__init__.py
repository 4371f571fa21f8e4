"""The supervisor: starts the agent (which forks its two workers), runs the UI or the printer, stops all."""

from dashfloat.runtime._agent_link import MAX_RESTARTS, AgentProcess
from dashfloat.runtime._run import run
from dashfloat.runtime.printer import Printer

__all__ = ["MAX_RESTARTS", "AgentProcess", "Printer", "run"]
