"""Background jobs as the agent tells them (issue 36, ADR 0080): the row a job's end leaves, and what a resumed session
says of the jobs its earlier run started. Pure functions; the executor runs the jobs (``executor/_jobs.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from dashfloat.protocol import ConversationEntry, JobExited, JobReport, SystemEntry, ToolReply


def _short(command: str, width: int = 60) -> str:
    line = " ".join(command.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def exit_row(ended: JobExited) -> SystemEntry:
    """The transcript's row for a job that ended: how, and the last line it printed."""
    if ended.state == "killed":
        how = "was stopped"
    elif ended.exit_code is None:
        how = "ended"
    else:
        how = f"exited with code {ended.exit_code}"
    last = f" — last line: {_short(ended.last_line, 100)}" if ended.last_line else ""
    failed = ended.state == "exited" and ended.exit_code not in (None, 0)
    return SystemEntry(
        text=f"job {ended.job_id} `{_short(ended.command)}` {how}{last}", level="warning" if failed else "info"
    )


def lost_jobs(transcript: Sequence[ConversationEntry]) -> list[SystemEntry]:
    """What a resumed session says of the jobs its earlier run left running: they are gone (the executor that ran
    them ended with it), never running. A job the model saw end (its last report not ``running``) is not named."""
    last: dict[int, JobReport] = {}
    for entry in transcript:
        if isinstance(entry, ToolReply) and isinstance(entry.result, JobReport):
            last[entry.result.job_id] = entry.result
    lost = sorted(job_id for job_id, report in last.items() if report.state == "running")
    if not lost:
        return []
    named = ", ".join(str(job_id) for job_id in lost)
    return [
        SystemEntry(
            text=f"background job(s) {named} of the earlier run are not running: jobs end with the session that "
            "started them; start them again if they are needed",
            level="warning",
        )
    ]
