"""Saved state, shared by the main process and the agent: the state directory, session logs, input history.

Library code only (no processes, no messages): ``state`` says where things live, ``log`` reads and writes the
session files (docs/sessions.md), ``history`` keeps the prompts for Up/Down.
"""

__all__ = ["history", "log", "state"]
