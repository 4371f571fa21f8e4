"""The ``--json`` event contract: each line as written, the final ``result`` record, and the published schema.

``docs/events.schema.json`` is ``event_schema()`` written out; a test keeps the two equal, so the stream's shape can
only change with the file (and ``EVENT_SCHEMA_VERSION`` when a change is not additive). See docs/headless.md.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

import msgspec

from dashfloat.catalogue import call_name
from dashfloat.protocol import (
    JSON_ENCODER,
    AgentReady,
    AgentToUi,
    ChangeRecorded,
    ConfirmRequested,
    PatchedFile,
    ToolCallShown,
    ToolOutputShown,
    Usage,
)

EVENT_SCHEMA_VERSION: Final = 1
"""Raised when an event loses or renames a field or changes a field's meaning; a new field or event keeps it."""

Outcome = Literal["completed", "stopped", "failed", "limit", "refused", "interrupted", "terminated"]
LimitName = Literal["episodes", "time", "budget", "turn"]

_SUMMARY_LINES = re.compile(r"\+(\d+)(?: −(\d+))?")


class ResultUsage(msgspec.Struct, frozen=True):
    """Tokens the provider reported, summed over the run's requests (0 where it reported nothing)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


class ResultChange(msgspec.Struct, frozen=True):
    """One file the run changed: its lines added and removed, its sha256 before and after (null: absent then)."""

    path: str
    added: int
    removed: int
    before_sha256: str | None = None
    """None: the file did not exist before the run (or, without --patch, a change record did not say)."""
    after_sha256: str | None = None
    """None: the run deleted the file (or, without --patch, a change record did not say)."""


class RunResult(msgspec.Struct, frozen=True, tag_field="type", tag="result"):
    """The last line of every ``--json`` run: how it ended and what it did."""

    outcome: Outcome
    exit_code: int
    session_id: str | None
    """None: the run saved no session."""
    episodes: int
    """Model requests the run started and let run."""
    duration_s: float
    usage: ResultUsage
    changes: list[ResultChange]
    limit: LimitName | None = None
    """Which bound ended the run (outcome "limit"): --max-episodes, --timeout, --budget-tokens, or the agent's
    per-turn cap."""


def add_usage(total: ResultUsage, usage: Usage) -> ResultUsage:
    """``total`` plus one request's usage; the cached and reasoning figures count where the provider gave them."""
    # getattr: the two optional fields are read where the protocol's Usage carries them (None: not reported)
    cached = getattr(usage, "cached_tokens", None) or 0
    reasoning = getattr(usage, "reasoning_tokens", None) or 0
    return ResultUsage(
        prompt_tokens=total.prompt_tokens + usage.prompt_tokens,
        completion_tokens=total.completion_tokens + usage.completion_tokens,
        cached_tokens=total.cached_tokens + int(cached),
        reasoning_tokens=total.reasoning_tokens + int(reasoning),
    )


def summary_lines(summary: str) -> tuple[int, int]:
    """Lines added and removed as a change record's summary says them (``+3 −1 · 40 bytes``, ``new file · +2``)."""
    found = _SUMMARY_LINES.search(summary)
    if found is None:
        return 0, 0
    return int(found[1]), int(found[2] or 0)


def changed_files(records: list[ChangeRecorded]) -> list[ResultChange]:
    """The file changes of a run in the order first seen, one entry per path (commands' changes are not recorded):
    lines summed, the digest before the first change and after the last."""
    changes: dict[str, ResultChange] = {}
    for record in records:
        if record.path:
            added, removed = summary_lines(record.summary)
            first = changes.get(record.path)
            changes[record.path] = ResultChange(
                path=record.path,
                added=added + (first.added if first else 0),
                removed=removed + (first.removed if first else 0),
                before_sha256=first.before_sha256 if first else record.before_sha256,
                after_sha256=record.after_sha256,
            )
    return list(changes.values())


def patched_files(files: list[PatchedFile]) -> list[ResultChange]:
    """The changes --patch found (every file, commands' too, in path order) as the result lists them."""
    return [
        ResultChange(f.path, f.added, f.removed, before_sha256=f.before_sha256, after_sha256=f.after_sha256)
        for f in files
    ]


def encode_event(message: AgentToUi, tool_names: dict[str, str]) -> bytes:
    """One event as its JSON line is written (without the newline): ``agent_ready`` with the schema version and
    without the prompt history, every tool event with the tool's ``name`` at the top level."""
    match message:
        case AgentReady():
            fields = msgspec.to_builtins(msgspec.structs.replace(message, history=[]))
            return JSON_ENCODER.encode({"type": fields.pop("type"), "schema": EVENT_SCHEMA_VERSION, **fields})
        case ToolCallShown(id=call_id, args=args):
            return _named(message, tool_names.setdefault(call_id, call_name(args)))
        case ToolOutputShown(id=call_id):
            return _named(message, tool_names.get(call_id, ""))
        case ConfirmRequested(subject=subject):
            return _named(message, call_name(subject))
        case _:
            return JSON_ENCODER.encode(message)


def _named(message: AgentToUi, name: str) -> bytes:
    fields = msgspec.to_builtins(message)
    return JSON_ENCODER.encode({"type": fields.pop("type"), "name": name, **fields})


def event_schema() -> dict[str, Any]:
    """The JSON Schema of every ``--json`` line (docs/events.schema.json)."""
    schema: dict[str, Any] = msgspec.json.schema(AgentToUi | RunResult)
    defs = schema["$defs"]
    ready = defs["AgentReady"]
    properties = ready["properties"]
    del properties["history"]  # never written: a log shared as a CI artifact must not carry the user's prompts
    ready["properties"] = {"type": properties.pop("type"), "schema": {"const": EVENT_SCHEMA_VERSION}, **properties}
    ready["required"].insert(1, "schema")
    ready["description"] = "The agent is up (first start or restart): model, working directory, sandbox, rules."
    for tool_event in ("ToolCallShown", "ToolOutputShown", "ConfirmRequested"):
        properties = defs[tool_event]["properties"]
        defs[tool_event]["properties"] = {"type": properties.pop("type"), "name": {"type": "string"}, **properties}
        defs[tool_event]["required"].insert(1, "name")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "DashFloat --json events",
        "description": f"One JSON object per line; agent_ready carries schema {EVENT_SCHEMA_VERSION}; the last line "
        "is the result record. See docs/headless.md.",
        "x-schema-version": EVENT_SCHEMA_VERSION,
        **schema,
    }
