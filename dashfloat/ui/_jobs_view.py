"""/jobs and the status bar's running-job count (issue 36, ADR 0080): the jobs as the UI saw them start, print and
end. Pure: the state keeps the rows (``UiState.jobs``), ``updated`` folds each job message in, ``listing`` is /jobs."""

from __future__ import annotations

from typing import Final

import msgspec

from dashfloat.protocol import JobExited, JobOutput, JobStarted, JobState

JOB_ROWS_MAX: Final = 50
"""Rows the UI keeps: past this the oldest ended job is dropped (running ones are at most the executor's cap)."""
JOB_LAST_LINE_CHARS: Final = 60
JOB_COMMAND_CHARS: Final = 40
JOBS_USAGE: Final = "usage: /jobs [stop N | expose N]"


class JobRow(msgspec.Struct, frozen=True):
    """One job in /jobs."""

    id: int
    command: str
    state: JobState = "running"
    started: float = 0.0
    """The UI's clock (``UiState.now``) when it started."""
    last_line: str = ""
    exit_code: int | None = None


def _last_line(text: str, before: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else before


def updated(rows: tuple[JobRow, ...], event: JobStarted | JobOutput | JobExited, now: float) -> tuple[JobRow, ...]:
    """The rows after one job message."""
    match event:
        case JobStarted(job_id=job_id, command=command):
            kept = [row for row in rows if row.id != job_id]
            ended = [row for row in kept if row.state != "running"]
            drop = {row.id for row in ended[: max(0, len(kept) + 1 - JOB_ROWS_MAX)]}
            return (*[row for row in kept if row.id not in drop], JobRow(job_id, command, started=now))
        case JobOutput(job_id=job_id, text=text):
            return tuple(
                msgspec.structs.replace(row, last_line=_last_line(text, row.last_line)) if row.id == job_id else row
                for row in rows
            )
        case JobExited(job_id=job_id, state=state, exit_code=code, last_line=last):
            return tuple(
                msgspec.structs.replace(row, state=state, exit_code=code, last_line=last or row.last_line)
                if row.id == job_id
                else row
                for row in rows
            )


def running(rows: tuple[JobRow, ...]) -> int:
    """How many jobs run (the status bar's count)."""
    return sum(1 for row in rows if row.state == "running")


def status_label(rows: tuple[JobRow, ...]) -> str:
    """The status bar's part: `` · 2 jobs`` while any runs, else nothing."""
    count = running(rows)
    return f" · {count} job{'s' * (count != 1)}" if count else ""


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _clip(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def listing(rows: tuple[JobRow, ...], now: float) -> str:
    """/jobs: one line a job (id, state, age, command, last line), running ones first, and how to stop one."""
    if not rows:
        return "no background jobs in this session (the model starts one with execute_command's background)"
    ordered = sorted(rows, key=lambda row: (row.state != "running", row.id))
    lines = ["background jobs (/jobs stop N stops one; /jobs expose N opens its ports on this machine):"]
    for row in ordered:
        state = row.state if row.exit_code is None else f"{row.state} {row.exit_code}"
        age = _age(now - row.started) if row.state == "running" else "-"
        last = f" — {_clip(row.last_line, JOB_LAST_LINE_CHARS)}" if row.last_line else ""
        lines.append(f"  {row.id:>3}  {state:<9} {age:>7}  {_clip(row.command, JOB_COMMAND_CHARS)}{last}")
    return "\n".join(lines)


def job_action(arg: str) -> tuple[str, int] | str:
    """``stop`` or ``expose`` and the job number of ``/jobs stop N`` / ``/jobs expose N``, or the usage error."""
    word, _, number = arg.partition(" ")
    if word not in ("stop", "expose") or not number.strip().isdigit() or int(number) < 1:
        return JOBS_USAGE
    return word, int(number)
