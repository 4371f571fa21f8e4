"""From parsed flags and the environment to what the runtime starts: provider, options, state paths."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

import msgspec

from dashfloat.agent import AgentOptions
from dashfloat.config import (
    ConfigError,
    ProviderFlags,
    command_limits,
    compact_at_percent,
    first_byte_timeout_s,
    idle_timeout_from,
    idle_timeout_s,
    provider_key_envs,
    read_only_commands,
    resolve_provider,
    sandbox_settings,
)
from dashfloat.executor import SandboxProbe, detect_sandbox
from dashfloat.permission_files import load_rules, user_permissions_path
from dashfloat.protocol import ApprovalMode
from dashfloat.sessions.state import LOG_FILENAME, SESSIONS_DIRNAME, ensure_private_dir, state_dir

# Sessions named when --resume finds none or several (`dashfloat sessions` lists them all).
RESUME_CANDIDATES_MAX: Final = 10


class LaunchError(Exception):
    """A usage or configuration error: one line, exit code 2."""


class Launch(msgspec.Struct):
    """What the runtime needs, plus how to stop what was started here (the demo server)."""

    options: AgentOptions
    log_path: str
    stop: Callable[[], None] = msgspec.field(default=lambda: None)


def prepare(
    args: argparse.Namespace,
    cwd: str,
    env: Mapping[str, str],
    held_fds: Sequence[int] = (),
    sandbox_probe: SandboxProbe | None = None,
) -> Launch:
    """Resolve the provider (flag > environment > file; the demo when nothing is configured). ``held_fds``: pipe
    ends of processes already started, which the demo server must not hold; ``sandbox_probe``: the sandbox's probe,
    started before the flags were read (else it runs here). The caller reaps it on every way out."""
    flags = ProviderFlags(provider=args.provider, base_url=args.base_url, model=args.model)
    try:
        provider = None if args.demo else resolve_provider(flags, env)
        idle_timeout = idle_timeout_s(env)
        rules = load_rules(env, cwd)
        read_only = read_only_commands(env)
        sandbox_config = sandbox_settings(env)
        limits = command_limits(env)
        idle_from = idle_timeout_from(env)
        compact_at = compact_at_percent(env)
    except ConfigError as exc:
        raise LaunchError(str(exc)) from exc
    state = state_dir(env)
    try:
        ensure_private_dir(state)
    except OSError as exc:
        raise LaunchError(f"cannot create the state directory {state}: {exc}") from exc
    if args.resume:
        check_resume(state / SESSIONS_DIRNAME, args.resume)
    stop: Callable[[], None] = lambda: None  # noqa: E731 - replaced when the demo server runs
    notice = ""
    if provider is None:
        from dashfloat.demo import start_demo

        demo = start_demo(env, held_fds)
        provider, stop, notice = demo.provider, demo.stop, demo.notice if not args.demo else ""
    try:
        first_byte = first_byte_timeout_s(env, provider.base_url)
    except ConfigError as exc:
        stop()
        raise LaunchError(str(exc)) from exc
    restoring = bool(getattr(args, "undo", False)) or getattr(args, "rewind", None) is not None
    # --yes applies an undo/rewind; it does not widen what tools may do (none run in that mode anyway)
    approval: ApprovalMode = "all" if args.yes and not restoring else args.approve
    try:
        key_envs = provider_key_envs(env, provider)
    except ConfigError as exc:
        stop()
        raise LaunchError(str(exc)) from exc
    sandbox = detect_sandbox(
        args.sandbox or sandbox_config.mode,
        args.network or sandbox_config.network,
        sandbox_config.deny_read,
        env,
        # the keys the LLM process reads from the environment are not the commands' business
        hide_env=key_envs,
        probe=sandbox_probe,
    )
    sandbox = msgspec.structs.replace(sandbox, limits=limits, pass_env=sorted(set(sandbox_config.pass_env)))
    if args.sandbox and args.sandbox != "off" and sandbox.unavailable:
        # asked for by name (a script's --sandbox read-only): running unconfined instead would betray it
        stop()
        raise LaunchError(
            f"--sandbox {args.sandbox} cannot start: {sandbox.unavailable}; nothing ran "
            "(--sandbox off runs commands unconfined, with your full permissions)"
        )
    options = AgentOptions(
        provider=provider,
        cwd=cwd,
        approval=approval,
        exec_timeout_s=args.exec_timeout,
        sandbox=sandbox,
        idle_timeout_s=idle_timeout,
        idle_timeout_from=idle_from,
        first_byte_timeout_s=first_byte,
        compact_at_percent=compact_at,
        state_dir=str(state),
        resume_id=args.resume or "",
        continue_latest=args.continue_latest or (restoring and not args.resume),
        replay=not restoring,
        restoring=restoring,
        rules=rules,
        rules_path=str(user_permissions_path(env)),
        read_only_commands=read_only,
        notice="" if restoring else notice,
    )
    return Launch(options=options, log_path=os.path.join(state, LOG_FILENAME), stop=stop)


def check_resume(sessions: Path, wanted: str) -> None:
    """Raise LaunchError naming the candidates unless ``wanted`` names exactly one saved session."""
    from dashfloat.sessions.log import SessionError, find_session, list_sessions

    try:
        find_session(sessions, wanted)
        return
    except SessionError as exc:
        problem = str(exc).split(": matches")[0]
    skipped: list[str] = []
    infos = list_sessions(sessions, skipped)
    matching = [info for info in infos if info.id.startswith(wanted.strip())]
    shown = matching if len(matching) > 1 else infos
    if not shown:
        raise LaunchError("\n".join([f"{problem}; there are no saved sessions", *skipped]))
    lines = [f"{problem}; {'these match' if len(matching) > 1 else 'saved sessions, newest first'}:"]
    for info in shown[:RESUME_CANDIDATES_MAX]:
        title = info.title.replace("\n", " ")[:60]
        lines.append(f"  {info.id}  {info.last_activity}  {info.cwd}  {title}")
    if len(shown) > RESUME_CANDIDATES_MAX:
        lines.append(f"  … and {len(shown) - RESUME_CANDIDATES_MAX} more (dashfloat sessions lists them all)")
    raise LaunchError("\n".join([*lines, *skipped]))
