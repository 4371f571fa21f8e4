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
    mcp_servers,
    provider_key_envs,
    read_only_commands,
    resolve_provider,
    sandbox_settings,
)
from dashfloat.executor import SandboxProbe, detect_sandbox
from dashfloat.hooks import load_project_hooks, trusted, user_hooks
from dashfloat.mcp_project import approved, load_project_mcp, merged
from dashfloat.permission_files import load_rules, user_permissions_path
from dashfloat.protocol import ApprovalMode, NetworkMode, ProviderConfig
from dashfloat.sandbox_access import with_access
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
    flags = ProviderFlags(args.provider, args.base_url, args.model, getattr(args, "reasoning_effort", None))
    try:
        provider = None if args.demo else resolve_provider(flags, env)
        idle_timeout = idle_timeout_s(env)
        rules = load_rules(env, cwd)
        read_only = read_only_commands(env)
        sandbox_config = sandbox_settings(env)
        limits = command_limits(env)
        idle_from = idle_timeout_from(env)
        compact_at = compact_at_percent(env)
        mcp = mcp_servers(env)  # MCP client (ADR 0086): a project's servers run only once approved (/mcp approve)
        mcp_project = load_project_mcp(cwd)
        hooks = user_hooks(env)  # hooks (ADR 0088): the project's run only once trusted (/hooks trust)
        project_hooks = load_project_hooks(cwd)
    except ConfigError as exc:
        raise LaunchError(str(exc)) from exc
    state = state_dir(env)
    if project_hooks is not None and trusted(str(state), project_hooks):
        hooks += project_hooks.hooks
    try:
        ensure_private_dir(state)
    except OSError as exc:
        raise LaunchError(f"cannot create the state directory {state}: {exc}") from exc
    session_id: str | None = getattr(args, "session_id", None)
    if session_id is not None:
        from dashfloat.sessions.log import valid_session_id

        if args.resume is not None or args.continue_latest:
            raise LaunchError("--session-id ID names the session itself: give it without --resume or --continue")
        if (why := valid_session_id(session_id)) is not None:
            raise LaunchError(f"--session-id {session_id!r} cannot name a session: {why}")
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
    try:
        resume_id = claim_session(state / SESSIONS_DIRNAME, args, session_id, cwd, provider, restoring)
    except LaunchError:
        stop()
        raise
    # --yes applies an undo/rewind; it does not widen what tools may do (none run in that mode anyway)
    approval: ApprovalMode = "all" if args.yes and not restoring else args.approve
    try:
        key_envs = provider_key_envs(env, provider)
    except ConfigError as exc:
        stop()
        raise LaunchError(str(exc)) from exc
    # issue 35: --network MODE over config's network = true (on); the default reaches the registries through the proxy
    network_mode: NetworkMode = args.network or ("on" if sandbox_config.network else "registries")
    sandbox = detect_sandbox(
        args.sandbox or sandbox_config.mode,
        network_mode == "on",
        sandbox_config.deny_read,
        env,
        # the keys the LLM process reads from the environment are not the commands' business
        hide_env=key_envs,
        probe=sandbox_probe,
    )
    sandbox = msgspec.structs.replace(sandbox, limits=limits, pass_env=sorted(set(sandbox_config.pass_env)))
    c = sandbox_config
    sandbox = with_access(sandbox, network_mode, c.allow_domains, c.deny_domains, c.writable_presets, c.writable, env)
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
        resume_id=resume_id,
        continue_latest=args.continue_latest or (restoring and not resume_id),
        replay=not restoring,
        restoring=restoring,
        rules=rules,
        rules_path=str(user_permissions_path(env)),
        read_only_commands=read_only,
        mcp_servers=merged(mcp, mcp_project if mcp_project and approved(str(state), mcp_project) else None),
        mcp_project=mcp_project if mcp_project and not approved(str(state), mcp_project) else None,
        notice="" if restoring else notice,
        hooks=hooks,
        project_hooks=project_hooks,
    )
    return Launch(options=options, log_path=os.path.join(state, LOG_FILENAME), stop=stop)


def claim_session(
    sessions: Path,
    args: argparse.Namespace,
    session_id: str | None,
    cwd: str,
    provider: ProviderConfig,
    restoring: bool,
) -> str:
    """The id the agent is to resume (empty: none), once the session it names is free: another process writing it
    is refused here, with its PID and host, before anything runs (the agent's writer takes the lock itself).
    ``--session-id ID``: a session that does not exist yet is created under that id (header only)."""
    if session_id is None and not args.resume and not (args.continue_latest or restoring):
        return ""  # a new session: nothing to claim, and the log's code stays out of this process (ADR 0090)
    from dashfloat.sessions.log import SessionError, SessionLocked, check_unlocked, find_session, newest_for_cwd

    try:
        if session_id is not None:
            return _named_session(sessions, session_id, cwd, provider, restoring)
        if args.resume:
            path: Path | None = find_session(sessions, args.resume)
        elif args.continue_latest or restoring:
            path = newest_for_cwd(sessions, cwd)
        else:
            return ""
        if path is not None:
            check_unlocked(path)
    except SessionLocked as exc:
        raise LaunchError(str(exc)) from exc
    except SessionError:
        pass  # the agent says what it found and what it does instead, as it always has
    return args.resume or ""


def _named_session(sessions: Path, session_id: str, cwd: str, provider: ProviderConfig, restoring: bool) -> str:
    """``--session-id``: refuse one that cannot be resumed or is in use; create one that does not exist yet."""
    from dashfloat import __version__
    from dashfloat.sessions.log import (
        SESSION_SUFFIX,
        SessionError,
        SessionLocked,
        SessionWriter,
        check_unlocked,
        new_header,
        read_header,
    )

    path = sessions / f"{session_id}{SESSION_SUFFIX}"
    if not path.exists():
        if restoring:
            raise LaunchError(f"--session-id {session_id}: no such session in {sessions}; nothing to restore")
        header = msgspec.structs.replace(
            new_header(cwd=cwd, provider=provider.name, model=provider.model, dashfloat_version=__version__),
            id=session_id,
        )
        try:
            SessionWriter.create(sessions, header).close()
            return session_id
        except SessionLocked as exc:
            raise LaunchError(str(exc)) from exc
        except (SessionError, OSError) as exc:
            if not path.exists():
                raise LaunchError(f"--session-id {session_id}: cannot create the session: {exc}") from exc
            # another run created it a moment ago: resumed below, like any existing one
    try:
        read_header(path)  # a damaged body is repaired by the agent as --resume does; a foreign header is not
        check_unlocked(path)
    except SessionLocked as exc:
        raise LaunchError(str(exc)) from exc
    except SessionError as exc:
        raise LaunchError(f"--session-id {session_id}: {exc}; move the file away or choose another id") from exc
    return session_id


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
