"""Hooks: the person's own commands, run at five points of a session on Claude Code's contract where it fits
(ADR 0088). The executor runs them (``executor/_hooks.py``); this module is the rest, pure but for two small files:

- ``HookSet.from_config`` / ``load_project_hooks``: ``[[hooks.EVENT]]`` tables as ``Hook`` values;
- ``HookSet.for_tool``: the hooks one call runs (``matches``: a matcher is a regular expression over the tool's
  whole name);
- ``tool_payload`` / ``event_payload``: the JSON a hook reads on its stdin;
- ``read_hook``: a hook's exit status and output as a ``HookVerdict`` (block, context for the model, a notice);
- ``trusted`` / ``trust``: a project's hooks run only once the person trusted that file's content (per project,
  per SHA-256, in ``<state dir>/trusted-hooks.json``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal, get_args

import msgspec

from dashfloat import content_approvals
from dashfloat.config import ConfigError, HooksTable, check_hooks, config_path, read_toml
from dashfloat.protocol import HookCommand, ToolHooks

HookEvent = Literal["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart"]
HOOK_EVENTS: Final[tuple[HookEvent, ...]] = get_args(HookEvent)
TOOL_EVENTS: Final = ("PreToolUse", "PostToolUse")

HOOK_TIMEOUT_DEFAULT_S: Final = 60.0
"""A hook's timeout when its table gives none (Claude Code's default); killed past it, and the call goes on."""
HOOK_OUTPUT_MAX_BYTES: Final = 64 * 1024
"""What is kept of each of a hook's stdout and stderr; the rest is read and dropped, and the user told."""
HOOK_CONTEXT_MAX_CHARS: Final = 10_000
"""What one hook may add for the model (Claude Code's cap on ``additionalContext``); the rest is cut, marked."""
BLOCK_EXIT: Final = 2
"""The exit status with which a hook blocks (its stderr is the reason)."""
PROJECT_HOOKS: Final = Path(".dashfloat") / "hooks.toml"
TRUST_FILENAME: Final = "trusted-hooks.json"
TRUST_MAX_PROJECTS: Final = 1000
"""Projects the trust file remembers; the oldest entries go first."""


class Hook(msgspec.Struct, frozen=True):
    """One configured hook."""

    event: HookEvent
    command: str
    matcher: str = ""
    timeout_s: float = HOOK_TIMEOUT_DEFAULT_S
    source: str = ""
    """The file it came from."""

    def run(self) -> HookCommand:
        """What the executor is sent to run it."""
        return HookCommand(command=self.command, timeout_s=self.timeout_s, source=self.source)


def matches(matcher: str, tool: str) -> bool:
    """Whether ``matcher`` names ``tool``: empty or ``*`` names every tool; else the whole name must match."""
    return matcher in ("", "*") or re.fullmatch(matcher, tool) is not None


class HookSet(msgspec.Struct, frozen=True):
    """The hooks a session runs (the user's, then a trusted project's), in their files' order."""

    hooks: list[Hook] = []

    @classmethod
    def from_table(cls, table: HooksTable, source: str) -> HookSet:
        """A checked ``[hooks]`` table (``config.check_hooks``) as hooks."""
        hooks = [
            Hook(event, entry.command, entry.matcher, entry.timeout or HOOK_TIMEOUT_DEFAULT_S, source)
            for event in HOOK_EVENTS
            for entry in getattr(table, event)
        ]
        return cls(hooks)

    def __add__(self, other: HookSet) -> HookSet:
        return HookSet([*self.hooks, *other.hooks])

    def for_event(self, event: HookEvent) -> list[HookCommand]:
        """The hooks of an event that names no tool (UserPromptSubmit, Stop, SessionStart)."""
        return [hook.run() for hook in self.hooks if hook.event == event]

    def for_tool(self, tool: str, session_id: str) -> ToolHooks | None:
        """The PreToolUse and PostToolUse hooks whose matcher names ``tool``; None when there is none."""
        pre = [hook.run() for hook in self.hooks if hook.event == "PreToolUse" and matches(hook.matcher, tool)]
        post = [hook.run() for hook in self.hooks if hook.event == "PostToolUse" and matches(hook.matcher, tool)]
        return ToolHooks(pre=pre, post=post, session_id=session_id, tool_name=tool) if pre or post else None


def user_hooks(env: Mapping[str, str]) -> HookSet:
    """The hooks of the user's config.toml (checked by ``load_config``); none without a file."""
    from dashfloat.config import load_config

    config = load_config(env)
    return HookSet.from_table(config.hooks, str(config_path(env))) if config is not None else HookSet()


class ProjectHooks(msgspec.Struct, frozen=True):
    """A project's hooks file as read: its hooks, and the SHA-256 of its bytes (what trust is given to)."""

    path: str
    hooks: HookSet
    digest: str


def load_project_hooks(cwd: str) -> ProjectHooks | None:
    """``<cwd>/.dashfloat/hooks.toml``, or None when there is none; ConfigError names the file and the field."""
    path = Path(cwd) / PROJECT_HOOKS
    document = read_toml(path)
    if document is None:
        return None
    unknown = sorted(set(document) - {"hooks"})
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}: unknown field (the file holds [[hooks.EVENT]] tables)")
    try:
        table = msgspec.convert(document.get("hooks", {}), HooksTable)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: hooks: {exc}") from exc
    check_hooks(path, table)
    import hashlib  # only for a project with hooks: not on every start's path (issue 19)

    # The digest of what was parsed, canonical: the same hooks written otherwise are the same trust.
    digest = hashlib.sha256(msgspec.json.encode(table)).hexdigest()
    return ProjectHooks(str(path), HookSet.from_table(table, str(path)), digest)


def trusted(state_dir: str, project: ProjectHooks) -> bool:
    """Whether the person trusted exactly this content of this project's hooks file."""
    return content_approvals.is_approved(state_dir, TRUST_FILENAME, project.path, project.digest)


def trust(state_dir: str, project: ProjectHooks) -> None:
    """Remember that the person trusts this content of this project's hooks file (atomically)."""
    content_approvals.remember(state_dir, TRUST_FILENAME, project.path, project.digest, TRUST_MAX_PROJECTS)


def describe(hooks: HookSet) -> list[str]:
    """One line per hook, for /hooks and for the question whether to trust a project's."""
    lines: list[str] = []
    for hook in hooks.hooks:
        on = f" [{hook.matcher}]" if hook.matcher and hook.event in TOOL_EVENTS else ""
        lines.append(f"{hook.event}{on}: {hook.command} (timeout {hook.timeout_s:g}s, {hook.source})")
    return lines


# ---------------------------------------------------------------- what a hook reads


def tool_payload(
    event: HookEvent,
    session_id: str,
    cwd: str,
    tool_name: str,
    tool_input: object,
    tool_use_id: str,
    tool_response: object = None,
) -> bytes:
    """The JSON a PreToolUse or PostToolUse hook reads on stdin (Claude Code's field names)."""
    payload: dict[str, object] = {
        "session_id": session_id,
        "cwd": cwd,
        "hook_event_name": event,
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": tool_use_id,
    }
    if event == "PostToolUse":
        payload["tool_response"] = tool_response
    return msgspec.json.encode(payload)


def event_payload(event: HookEvent, session_id: str, cwd: str, **fields: object) -> bytes:
    """The JSON a UserPromptSubmit (``prompt``), Stop or SessionStart (``source``) hook reads on stdin."""
    return msgspec.json.encode({"session_id": session_id, "cwd": cwd, "hook_event_name": event, **fields})


# ---------------------------------------------------------------- what a hook said


class HookVerdict(msgspec.Struct, frozen=True):
    """What one hook's run means: it blocks (``reason``), adds ``context`` for the model, tells the user ``notice``."""

    blocked: bool = False
    reason: str = ""
    context: str = ""
    notice: str = ""


def _cut(text: str) -> str:
    text = text.strip()
    if len(text) <= HOOK_CONTEXT_MAX_CHARS:
        return text
    return (
        text[:HOOK_CONTEXT_MAX_CHARS]
        + f"\n[… cut: the hook gave {len(text)} characters, {HOOK_CONTEXT_MAX_CHARS} kept]"
    )


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    return line[:200] + ("…" if len(line) > 200 else "")


def _json_object(stdout: str) -> dict[str, object] | None:
    if not stdout.lstrip().startswith("{"):
        return None
    try:
        decoded = msgspec.json.decode(stdout)
    except msgspec.DecodeError:
        return None
    return decoded if isinstance(decoded, dict) else None


def read_hook(
    event: HookEvent,
    name: str,
    exit_code: int | None,
    stdout: str,
    stderr: str,
    *,
    timed_out_s: float | None = None,
    dropped_bytes: int = 0,
    error: str = "",
) -> HookVerdict:
    """What a hook's run means for ``event`` (``name``: how the user is told which hook). Exit 2 blocks with stderr
    as the reason (after the call, PostToolUse, it is context for the model); exit 0 may print a JSON object
    (``decision``, ``hookSpecificOutput.permissionDecision``/``additionalContext``, ``continue``, ``systemMessage``);
    anything else, a timeout included, is told to the user and changes nothing."""
    dropped = (
        f"; {dropped_bytes} bytes of its output past {HOOK_OUTPUT_MAX_BYTES} were dropped" if dropped_bytes else ""
    )
    if error:
        return HookVerdict(notice=f"{event} hook {name} did not run: {error}")
    if timed_out_s is not None:
        return HookVerdict(notice=f"{event} hook {name} timed out after {timed_out_s:g}s and was killed{dropped}")
    if exit_code == BLOCK_EXIT:
        why = _cut(stderr) or f"the {event} hook {name} exited 2 and gave no reason"
        if event in ("PreToolUse", "UserPromptSubmit"):
            return HookVerdict(blocked=True, reason=why, notice=dropped.removeprefix("; "))
        if event == "PostToolUse":
            return HookVerdict(context=why, notice=dropped.removeprefix("; "))
        return HookVerdict(notice=f"{event} hook {name} exited 2: {_first_line(stderr)}{dropped}")
    if exit_code != 0:
        return HookVerdict(notice=f"{event} hook {name} exited {exit_code}: {_first_line(stderr)}{dropped}".rstrip())
    output = _json_object(stdout) if not dropped_bytes else None
    if output is None:
        # Plain text: context where Claude Code takes it so (the prompt's and the session start's hooks).
        plain = _cut(stdout) if event in ("UserPromptSubmit", "SessionStart") else ""
        return HookVerdict(
            context=plain, notice=f"{event} hook {name}: {dropped.removeprefix('; ')}" if dropped else ""
        )
    specific = output.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    context = specific.get("additionalContext")
    context = _cut(context) if isinstance(context, str) else ""
    message = output.get("systemMessage")
    notice = f"{event} hook {name}: {_first_line(message)}" if isinstance(message, str) and message.strip() else ""
    reason = next(
        (
            text.strip()
            for text in (specific.get("permissionDecisionReason"), output.get("reason"), output.get("stopReason"))
            if isinstance(text, str) and text.strip()
        ),
        f"blocked by the {event} hook {name}",
    )
    blocks = (
        output.get("decision") == "block"
        or output.get("continue") is False
        or (event == "PreToolUse" and specific.get("permissionDecision") == "deny")
    )
    if blocks and event in ("PreToolUse", "UserPromptSubmit"):
        return HookVerdict(blocked=True, reason=_cut(reason), context=context, notice=notice)
    if blocks and event == "PostToolUse":
        context = "\n".join(part for part in (_cut(reason), context) if part)
    return HookVerdict(context=context, notice=notice)


def combine(verdicts: list[HookVerdict]) -> HookVerdict:
    """The verdicts of one event's hooks, run in order: the first block wins, contexts and notices add up."""
    blocked = next((verdict for verdict in verdicts if verdict.blocked), None)
    return HookVerdict(
        blocked=blocked is not None,
        reason=blocked.reason if blocked is not None else "",
        context="\n\n".join(verdict.context for verdict in verdicts if verdict.context),
        notice="\n".join(verdict.notice for verdict in verdicts if verdict.notice),
    )
