"""A task in Harbor's format, read from its directory (bench/tasks/NAME/)."""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

TASKS_DIR: Final = Path(__file__).resolve().parent.parent / "tasks"
DEFAULT_AGENT_TIMEOUT_S: Final = 600.0
"""The agent's time limit when ``task.toml`` has no ``[agent] timeout_sec`` (generous: a 0.5B model on 2 cores)."""
DEFAULT_VERIFIER_TIMEOUT_S: Final = 60.0
"""The grader's time limit when ``task.toml`` has no ``[verifier] timeout_sec``."""
ORACLE_TOOLS: Final = frozenset({"write_file", "edit_file", "execute_command", "read_file", "list_directory"})


class TaskError(ValueError):
    """A task directory that does not hold a usable task; the message names the file and what is wrong."""


@dataclass(frozen=True)
class OracleCall:
    """One tool call of a task's scripted solution, as the model would send it."""

    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Task:
    """One task: what the agent is told, where it starts, how it is graded, and the oracle's solution."""

    name: str
    root: Path
    instruction: str
    agent_timeout_s: float
    verifier_timeout_s: float
    calls: tuple[OracleCall, ...]
    final: str

    @property
    def workspace(self) -> Path:
        """The files the agent starts from (Harbor: what the Dockerfile copies to /app)."""
        return self.root / "environment" / "workspace"

    @property
    def setup(self) -> Path | None:
        """A script run in the copied workspace before the agent starts (a git repository's history), if any."""
        path = self.root / "environment" / "setup.sh"
        return path if path.is_file() else None

    @property
    def tests(self) -> Path:
        """The verifier: ``test.sh`` and what it needs; never visible to the agent."""
        return self.root / "tests"


def _seconds(table: dict[str, Any], section: str, default: float, where: Path) -> float:
    value = table.get(section, {}).get("timeout_sec", default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise TaskError(f"{where}: [{section}] timeout_sec must be a positive number of seconds, not {value!r}")
    return float(value)


def _calls(path: Path) -> tuple[tuple[OracleCall, ...], str]:
    if not path.is_file():
        return (), ""
    data = tomllib.loads(path.read_text())
    calls = []
    for entry in data.get("call", []):
        args = dict(entry)
        tool = args.pop("tool", None)
        if tool not in ORACLE_TOOLS:
            raise TaskError(f"{path}: a [[call]] names tool {tool!r}; use one of {sorted(ORACLE_TOOLS)}")
        calls.append(OracleCall(tool, args))
    return tuple(calls), str(data.get("final", ""))


def load_task(root: Path) -> Task:
    """The task in directory ``root``; ``TaskError`` when a required file is missing or malformed."""
    for required in ("task.toml", "instruction.md", "tests/test.sh", "environment/workspace"):
        if not (root / required).exists():
            raise TaskError(
                f"{root}: {required} is missing (a task needs task.toml, instruction.md, tests/test.sh "
                "and environment/workspace/)"
            )
    try:
        config = tomllib.loads((root / "task.toml").read_text())
    except tomllib.TOMLDecodeError as error:
        raise TaskError(f"{root / 'task.toml'}: {error}") from None
    try:
        calls, final = _calls(root / "solution" / "oracle.toml")
    except tomllib.TOMLDecodeError as error:
        raise TaskError(f"{root / 'solution' / 'oracle.toml'}: {error}") from None
    return Task(
        name=root.name,
        root=root,
        instruction=(root / "instruction.md").read_text().strip(),
        agent_timeout_s=_seconds(config, "agent", DEFAULT_AGENT_TIMEOUT_S, root / "task.toml"),
        verifier_timeout_s=_seconds(config, "verifier", DEFAULT_VERIFIER_TIMEOUT_S, root / "task.toml"),
        calls=calls,
        final=final,
    )


def load_tasks(root: Path = TASKS_DIR, pattern: str = "*") -> list[Task]:
    """Every task under ``root`` whose name matches one of ``pattern``'s comma-separated globs, by name."""
    globs = [part.strip() for part in pattern.split(",") if part.strip()] or ["*"]
    names = sorted(p.name for p in root.iterdir() if (p / "task.toml").is_file())
    chosen = [name for name in names if any(fnmatch.fnmatchcase(name, glob) for glob in globs)]
    if not chosen:
        raise TaskError(f"no task in {root} matches {pattern!r}; the tasks are: {', '.join(names)}")
    return [load_task(root / name) for name in chosen]
