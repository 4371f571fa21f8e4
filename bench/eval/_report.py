"""The results table and bench/eval-results.md: one section per run label, a new run replacing its own section."""

from __future__ import annotations

from collections.abc import Sequence

from bench.eval._run import TaskResult

PREAMBLE = """# Task suite results (`make eval`)

Each section is one run of bench/tasks/ (`python -m bench.eval`, ADR 0076): DashFloat ran each task as a user would
(`dashfloat -p INSTRUCTION --json --approve all`, default sandbox) in a fresh copy of the task's workspace, and the
task's own `tests/test.sh` graded the result afterwards, outside DashFloat. *episodes*: model requests; *tokens*: the
prompt and completion tokens the server reported for the run's last request (the context the run ended with, as the
`result` record carries it; not a sum over requests); *seconds*: the agent's wall time, grading excluded. A new run
replaces the section with its own heading.
"""


def _row(result: TaskResult) -> str:
    verdict = "PASS" if result.passed else "fail"
    tokens = result.stats.prompt_tokens + result.stats.completion_tokens
    note = result.note.replace("|", "\\|")
    return f"| {result.task} | {verdict} | {result.stats.episodes} | {tokens} | {result.seconds:.1f} | {note} |"


def results_section(heading: str, facts: Sequence[str], results: Sequence[TaskResult]) -> str:
    """A ``## heading`` section: the run's facts as a list, the score, and one table row per task."""
    passed = sum(1 for r in results if r.passed)
    lines = [f"## {heading}", ""]
    lines += [f"- {fact}" for fact in facts]
    lines += [f"- **{passed} of {len(results)} tasks passed**", ""]
    lines += ["| task | result | episodes | tokens | seconds | how the run ended |", "|---|---|---:|---:|---:|---|"]
    lines += [_row(r) for r in results]
    return "\n".join(lines) + "\n"


def update_results(text: str, section: str) -> str:
    """``text`` (an eval-results.md, possibly empty) with ``section`` replacing the section of the same heading,
    or appended; the preamble is written when the file has none."""
    heading = section.splitlines()[0]
    body = text if text.strip() else PREAMBLE
    head, *rest = body.split("\n## ")
    sections = ["## " + part for part in rest]
    replaced = False
    for index, old in enumerate(sections):
        if old.splitlines()[0] == heading:
            sections[index] = section
            replaced = True
    if not replaced:
        sections.append(section)
    parts = [head.rstrip("\n") + "\n"] + [s.rstrip("\n") + "\n" for s in sections]
    return "\n".join(parts)
