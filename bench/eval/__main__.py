"""`python -m bench.eval` (`make eval`): run the task suite and write its table to bench/eval-results.md.

Without ``--base-url`` the tasks run against the scripted oracle (CI's check of the runner and every grader);
``--do-nothing`` against a model that never calls a tool (every task must fail); with ``--base-url`` and
``--model`` against any OpenAI-compatible server.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from bench.eval._oracle import ScriptedKind, scripted_model
from bench.eval._report import results_section, update_results
from bench.eval._run import DEFAULT_TIMEOUT_S_CAP, AgentCommand, TaskResult, run_suite
from bench.eval._tasks import TASKS_DIR, Task, TaskError, load_tasks

RESULTS: Path = Path(__file__).resolve().parent.parent / "eval-results.md"
REPO = RESULTS.parent.parent
PROPS_TIMEOUT_S = 5.0
"""How long the run waits for a llama.cpp server's /props (what model file it serves) before doing without."""


def _default_command() -> str:
    beside = Path(sys.executable).parent / "dashfloat"
    return str(beside) if beside.exists() else (shutil.which("dashfloat") or "dashfloat")


def _positive(kind: type[int] | type[float], most: float) -> Callable[[str], float]:
    """An argparse type: a number of ``kind`` in 0 < N <= ``most``."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"needs a number, not {text!r}") from None
        if not 0 < value <= most:
            raise argparse.ArgumentTypeError(f"needs 0 < N <= {most:g}, not {text}")
        return value

    return parse


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (see --help)."""
    parser = argparse.ArgumentParser(prog="python -m bench.eval", description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server (default: the scripted oracle)")
    parser.add_argument("--model", help="the model to ask (with --base-url)")
    parser.add_argument("--tasks", default="*", metavar="PATTERN", help="comma-separated globs of task names")
    parser.add_argument("--jobs", type=_positive(int, 64), default=1, metavar="N", help="tasks run at a time")
    parser.add_argument(
        "--timeout",
        type=_positive(float, DEFAULT_TIMEOUT_S_CAP),
        metavar="SECONDS",
        help="each task's agent time limit (default: the task's [agent] timeout_sec)",
    )
    parser.add_argument("--do-nothing", action="store_true", help="a scripted model that never acts: all must fail")
    parser.add_argument("--label", help="the results section's heading (default: the model's name)")
    parser.add_argument("--note", action="append", default=[], help="a line added to the section's facts")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results file (default {RESULTS.name})")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--logs", type=Path, metavar="DIR", help="keep each run's events and verifier output here")
    parser.add_argument("--keep", action="store_true", help="leave each task's scratch directory in place")
    parser.add_argument("--dashfloat", default=_default_command(), metavar="CMD", help="the DashFloat command")
    parser.add_argument("--tasks-dir", type=Path, default=TASKS_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.do_nothing and args.base_url:
        parser.error("--do-nothing is a scripted model: it takes no --base-url")
    return args


def _git_commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10, check=False
        )
    except OSError:
        return "unknown"
    return done.stdout.strip() or "unknown"


def _served_model(base_url: str) -> str | None:
    """What a llama.cpp server says it serves (``/props``: model file and window); None from other servers."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{root}/props", timeout=PROPS_TIMEOUT_S) as answer:
            props = json.load(answer)
    except (OSError, ValueError):
        return None
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else props.get("n_ctx")
    return f"llama.cpp serving `{Path(str(props.get('model_path', '?'))).name}`, n_ctx {n_ctx}"


@contextlib.contextmanager
def _agent(args: argparse.Namespace, tasks: list[Task]) -> Iterator[tuple[AgentCommand, str, list[str]]]:
    command = tuple(shlex.split(args.dashfloat))
    if args.base_url:
        facts = [f"model `{args.model or '(server default)'}` at `{args.base_url}`"]
        served = _served_model(args.base_url)
        facts += [served] if served else []
        yield AgentCommand(command, args.base_url, args.model, args.timeout), args.label or args.model or "model", facts
        return
    kind: ScriptedKind = "nothing" if args.do_nothing else "oracle"
    with scripted_model(tasks, kind) as server:
        agent = AgentCommand(command, server.base_url, kind, args.timeout, isolate_config=True)
        label = args.label or ("scripted do-nothing model" if args.do_nothing else "scripted oracle")
        yield agent, label, [f"scripted `{kind}` model (bench/eval/_oracle.py) on 127.0.0.1"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite; 0 when it ran (and, against a scripted model, every verdict was the expected one)."""
    args = parse_args(argv)
    try:
        tasks = load_tasks(args.tasks_dir, args.tasks)
    except TaskError as error:
        print(f"bench.eval: {error}", file=sys.stderr)
        return 2
    with _agent(args, tasks) as (agent, label, facts):
        started = datetime.datetime.now(datetime.UTC)
        results = run_suite(tasks, agent, args.jobs, args.logs, args.keep)
    limit = f"{args.timeout:g} s each" if args.timeout else "each task's [agent] timeout_sec"
    facts += [
        f"{started:%Y-%m-%d %H:%M} UTC, checkout at commit {_git_commit()}, {platform.system()} with "
        f"{os.cpu_count()} cores, {args.jobs} task(s) at a time, time limit {limit}",
    ]
    facts += args.note
    if args.tasks != "*":
        facts.append(f"tasks: `{args.tasks}` ({len(tasks)} of the suite)")
    section = results_section(label, facts, results)
    print(section)
    if not args.no_write:
        old = args.out.read_text() if args.out.exists() else ""
        args.out.write_text(update_results(old, section))
        print(f"written to {args.out}", file=sys.stderr)
    return _verdict(args, results)


def _verdict(args: argparse.Namespace, results: list[TaskResult]) -> int:
    if args.base_url:
        return 0
    wrong = [r.task for r in results if r.passed == args.do_nothing]
    if wrong:
        expected = "failed" if args.do_nothing else "passed"
        print(
            f"bench.eval: these tasks should have {expected} against the scripted model: {', '.join(wrong)}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
