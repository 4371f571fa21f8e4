"""The approval modes on one key: Shift-Tab goes ask → edits → plan (→ all, only when config.toml enables it)."""

from __future__ import annotations

from typing import Final

from dashfloat.protocol import ApprovalMode

MODE_CYCLE: Final[tuple[ApprovalMode, ...]] = ("ask", "edits", "plan")
"""Shift-Tab's order; ``all`` joins it after ``plan`` only with ``[settings] shift_tab_all = true``."""
ACT_ON_PLAN: Final = "Act on the plan above."
"""Offered as the next prompt (put into an empty input) when Shift-Tab leaves plan mode after a turn in it."""


def next_mode(current: ApprovalMode, with_all: bool) -> ApprovalMode:
    """The mode after ``current`` in the cycle (a mode outside it, ``all`` without the setting, goes back to ask)."""
    cycle = (*MODE_CYCLE, "all") if with_all else MODE_CYCLE
    if current not in cycle:
        return cycle[0]
    return cycle[(cycle.index(current) + 1) % len(cycle)]
