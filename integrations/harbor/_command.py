"""What the Harbor adapter runs in a task container, and what it reads back: pure functions, no Harbor import.

- ``install_script(source)``: a POSIX sh script that installs DashFloat from ``source`` (a pip requirement: a git
  URL, a wheel's path in the container, or ``dashfloat==X``) with uv, which brings its own Python when the
  image's is too old or missing.
- ``run_command(instruction, settings)``: ``dashfloat -p - --json --yes --sandbox off`` with the instruction on
  stdin, its JSON lines teed to ``<logs>/dashfloat.jsonl``; exit codes 3 (a limit) and 4 (a mutation refused)
  are a finished attempt the verifier grades, not an agent crash, so the command exits 0 for them.
- ``parse_result(text)``: the run's final ``result`` record, read defensively (``RunRecord``; None when the run
  died before writing it).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Final

INSTALL_DIR: Final = "/opt/dashfloat"
"""Where uv keeps DashFloat's environment in the container; the ``dashfloat`` command goes to /usr/local/bin."""
PYTHON_VERSION: Final = "3.12"
"""The Python uv installs DashFloat with (DashFloat needs >= 3.11; the image's own Python is left alone)."""
LOG_NAME: Final = "dashfloat.jsonl"
STDERR_NAME: Final = "dashfloat.stderr"
FINISHED_CODES: Final = (0, 3, 4)
"""DashFloat exit codes that mean the attempt ran to an end the verifier can grade (completed, a limit, a
mutation refused); 1 (provider or stream failure), 2 (usage) and 130 (interrupted) fail the agent step."""
KNOWN_BASE_URLS: Final = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
}
"""Base URLs for Harbor model prefixes (``-m openai/gpt-4.1``) that need no ``base_url`` kwarg."""
PASSED_ENV: Final = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DASHFLOAT_PROVIDER", "DASHFLOAT_MODEL")
"""Host variables handed to the run when set: the provider's key stays out of the command line and the logs."""
RESULT_MAX_BYTES: Final = 1024 * 1024
"""The longest line read as the result record (its change list is bounded by the files a run touched)."""


class AdapterError(ValueError):
    """A setting the adapter cannot turn into a run; the message says which and what to give instead."""


@dataclass(frozen=True)
class RunSettings:
    """How one task's run is started (from the agent's kwargs and Harbor's model name)."""

    model: str | None = None
    base_url: str | None = None
    session_id: str | None = None
    max_episodes: int | None = None
    timeout_s: float | None = None
    logs_dir: str = "/logs/agent"
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunUsage:
    """Token counts from the result record (0 where the provider reported none)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True)
class RunRecord:
    """The fields of DashFloat's final ``result`` event that a harness reads; anything missing is None or 0."""

    outcome: str | None = None
    exit_code: int | None = None
    session_id: str | None = None
    episodes: int = 0
    duration_s: float | None = None
    usage: RunUsage = field(default_factory=RunUsage)
    changed_paths: tuple[str, ...] = ()


def model_and_base_url(model_name: str | None, base_url: str | None) -> tuple[str | None, str | None]:
    """Harbor's ``provider/model`` as DashFloat's ``--model`` and ``--base-url`` (an explicit base URL wins)."""
    if not model_name:
        return None, base_url
    provider, slash, model = model_name.partition("/")
    if not slash:
        return model_name, base_url
    if base_url is None and provider not in KNOWN_BASE_URLS:
        known = ", ".join(sorted(KNOWN_BASE_URLS))
        raise AdapterError(
            f"model {model_name!r}: no base URL known for {provider!r} ({known} have one); "
            "pass --agent-kwarg base_url=URL or set OPENAI_BASE_URL"
        )
    return model, base_url or KNOWN_BASE_URLS[provider]


def install_script(source: str) -> str:
    """The root shell script that installs DashFloat from ``source`` (a pip requirement) in the container."""
    if not source.strip():
        raise AdapterError("no DashFloat source: pass --agent-kwarg source=git+https://…/dashfloat.git or a wheel")
    needs_git = source.startswith("git+")
    packages = "curl ca-certificates" + (" git" if needs_git else "")
    return "\n".join(
        [
            "set -eu",
            # curl (and git for a git URL) from the image's package manager when it lacks them
            f"need=''; for c in curl {'git' if needs_git else ''}; do command -v $c >/dev/null 2>&1 || need=yes; done",
            'if [ -n "$need" ]; then',
            "  if command -v apt-get >/dev/null 2>&1; then",
            f"    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq {packages}",
            f"  elif command -v apk >/dev/null 2>&1; then apk add --no-cache {packages}",
            f"  elif command -v dnf >/dev/null 2>&1; then dnf install -y {packages}",
            "  else echo 'dashfloat install: no curl and no known package manager' >&2; exit 1; fi",
            "fi",
            "command -v uv >/dev/null 2>&1 || curl -LsSf https://astral.sh/uv/install.sh"
            " | env UV_INSTALL_DIR=/usr/local/bin UV_NO_MODIFY_PATH=1 sh",
            f"UV_TOOL_DIR={INSTALL_DIR} UV_TOOL_BIN_DIR=/usr/local/bin UV_PYTHON_INSTALL_DIR={INSTALL_DIR}/python"
            f" uv tool install --force --python {PYTHON_VERSION} {shlex.quote(source)}",
            "dashfloat --version",
        ]
    )


def dashfloat_argv(settings: RunSettings) -> list[str]:
    """The ``dashfloat`` command line of one run (the instruction comes on stdin)."""
    argv = ["dashfloat", "-p", "-", "--json", "--yes", "--sandbox", "off"]
    if settings.model:
        argv += ["--model", settings.model]
    if settings.base_url:
        argv += ["--base-url", settings.base_url]
    if settings.session_id:
        argv += ["--session-id", settings.session_id]
    if settings.max_episodes is not None:
        argv += ["--max-episodes", str(settings.max_episodes)]
    if settings.timeout_s is not None:
        argv += ["--timeout", f"{settings.timeout_s:g}"]
    return [*argv, *settings.extra_args]


def run_command(instruction: str, settings: RunSettings) -> str:
    """The shell command Harbor runs as the agent user: the instruction piped in, the JSON lines teed to the
    logs directory, DashFloat's stderr beside them, and its exit code mapped (``FINISHED_CODES`` -> 0)."""
    logs = shlex.quote(settings.logs_dir)
    finished = "|".join(str(code) for code in FINISHED_CODES)
    return (
        f"mkdir -p {logs}; "
        f"printf '%s' {shlex.quote(instruction)} | {shlex.join(dashfloat_argv(settings))}"
        f" 2> {logs}/{STDERR_NAME} > {logs}/{LOG_NAME}; "
        f'code=$?; case "$code" in {finished}) exit 0 ;; *) tail -n 20 {logs}/{STDERR_NAME} >&2; exit "$code" ;; esac'
    )


def _count(value: object) -> int:
    """A token or episode count as sent, or 0 for anything that is not a non-negative whole number."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _record(raw: dict[str, object]) -> RunRecord:
    usage = raw.get("usage")
    counts = usage if isinstance(usage, dict) else {}
    exit_code = raw.get("exit_code")
    duration = raw.get("duration_s")
    changes = raw.get("changes")
    return RunRecord(
        outcome=_text(raw.get("outcome")),
        exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
        session_id=_text(raw.get("session_id")),
        episodes=_count(raw.get("episodes")),
        duration_s=float(duration) if isinstance(duration, int | float) and not isinstance(duration, bool) else None,
        usage=RunUsage(
            prompt_tokens=_count(counts.get("prompt_tokens")),
            completion_tokens=_count(counts.get("completion_tokens")),
            cached_tokens=_count(counts.get("cached_tokens")),
            reasoning_tokens=_count(counts.get("reasoning_tokens")),
        ),
        changed_paths=tuple(c["path"] for c in changes if isinstance(c, dict) and isinstance(c.get("path"), str))
        if isinstance(changes, list)
        else (),
    )


def parse_result(text: str) -> RunRecord | None:
    """The last ``{"type": "result", …}`` line of a ``--json`` run's output; None when there is none (the run was
    killed first, or an older DashFloat wrote no result). Lines that are not JSON objects are skipped."""
    for line in reversed(text.splitlines()):
        if len(line) > RESULT_MAX_BYTES or '"result"' not in line:
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if isinstance(raw, dict) and raw.get("type") == "result":
            return _record(raw)
    return None
