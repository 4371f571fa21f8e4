"""/jobs and the status bar's count (issue 36): pure, from the job messages the UI receives."""

from __future__ import annotations

from dashfloat.protocol import ExposeJob, JobExited, JobOutput, JobStarted, StopJob
from dashfloat.ui._commands import Invalid, Send, ShowJobs, parse
from dashfloat.ui._jobs_view import JOB_ROWS_MAX, JOBS_USAGE, JobRow, listing, running, status_label, updated
from dashfloat.ui.state import UiState, reduce


def test_rows_follow_a_jobs_start_output_and_end() -> None:
    rows = updated((), JobStarted(job_id=1, call_id="c", command="npm run dev", pgid=9), now=100.0)
    assert rows == (JobRow(1, "npm run dev", started=100.0),) and status_label(rows) == " · 1 job"
    rows = updated(rows, JobOutput(job_id=1, text="compiling\nready on :5173\n\n"), now=101.0)
    assert rows[0].last_line == "ready on :5173"
    assert "    1  running       25s  npm run dev — ready on :5173" in listing(rows, now=125.0)
    rows = updated(rows, JobExited(job_id=1, state="exited", exit_code=2), now=130.0)
    assert running(rows) == 0 and status_label(rows) == ""
    assert "    1  exited 2        -  npm run dev — ready on :5173" in listing(rows, now=140.0)


def test_the_list_is_bounded_by_dropping_the_oldest_ended_jobs() -> None:
    rows: tuple[JobRow, ...] = ()
    for job_id in range(1, JOB_ROWS_MAX + 5):
        rows = updated(rows, JobStarted(job_id=job_id, call_id="c", command="true", pgid=1), now=0.0)
        if job_id > 1:
            rows = updated(rows, JobExited(job_id=job_id, state="exited", exit_code=0), now=0.0)
    assert len(rows) == JOB_ROWS_MAX and rows[0].id == 1 and rows[0].state == "running"  # running ones stay
    assert status_label(rows) == " · 1 job"


def test_jobs_command_parses() -> None:
    assert parse("/jobs") == ShowJobs()
    assert parse("/jobs stop 3") == Send(StopJob(job_id=3))
    assert parse("/jobs expose 2") == Send(ExposeJob(job_id=2))
    assert parse("/jobs stop x") == Invalid(JOBS_USAGE) == parse("/jobs kill 3") == parse("/jobs stop 0")
    assert listing((), 0.0).startswith("no background jobs in this session")


def test_the_state_keeps_the_rows_and_the_status_bar_counts_them() -> None:
    state = reduce(UiState(), JobStarted(job_id=4, call_id="c", command="python3 -m http.server", pgid=9))
    assert running(state.jobs) == 1
    state = reduce(state, JobExited(job_id=4, state="killed"))
    assert running(state.jobs) == 0 and state.jobs[0].state == "killed"
