"""One run of DashFloat: the agent process, the UI (or the headless printer), a clean stop on any exit."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Final

from dashfloat._startup.fork import release_free_heap
from dashfloat.agent import AgentOptions
from dashfloat.procutil import become_subreaper, kill_strays, reap_orphans
from dashfloat.runtime._agent_link import AgentProcess

if TYPE_CHECKING:
    from dashfloat.runtime._patch_link import PatchKeeper


def start_agent(log_path: str) -> AgentProcess:
    """Fork the agent before the options are known; ``run(…, link=…)`` gives them to it.

    The agent forks the LLM worker at once, so that worker imports its HTTP stack while this process reads the
    configuration and probes the sandbox (issue 19). Stop it with ``shutdown()`` if the start goes no further.
    """
    return AgentProcess(None, log_path)


EXIT_SESSION_REFUSED: Final = 2
"""The session named is another process's: a usage error, as the launch's own refusal is (printer.EXIT_USAGE)."""


def session_in_use(options: AgentOptions) -> str:
    """The refusal for a session the agent found locked: its holder, as the launch names it (if it still holds it)."""
    from dashfloat.sessions.log import SessionError, SessionLocked, check_unlocked, find_session, newest_for_cwd
    from dashfloat.sessions.state import SESSIONS_DIRNAME

    sessions = Path(options.state_dir) / SESSIONS_DIRNAME
    try:
        if options.resume_id:
            path: Path | None = find_session(sessions, options.resume_id)
        else:
            path = newest_for_cwd(sessions, options.cwd)
        if path is not None:
            check_unlocked(path)
    except SessionLocked as exc:
        return str(exc)
    except (SessionError, OSError):
        pass
    return "the session was taken by another process as this one started; wait for that run to finish, or stop it"


def run(
    options: AgentOptions,
    *,
    log_path: str,
    link: AgentProcess | None = None,
    prompt: str | None,
    first_prompt: str | None = None,
    json_mode: bool = False,
    undo_request: tuple[int | None, bool] | None = None,
    verbose: bool = False,
    max_episodes: int | None = None,
    timeout_s: float | None = None,
    last_message_path: str | None = None,
    budget_tokens: int | None = None,
    patch_path: str | None = None,
    notify: bool = True,
    no_color: bool = False,
    on_stop: Callable[[], None] = lambda: None,
    restore_terminal: Callable[[], None] = lambda: None,
) -> int:
    """Start the agent; one headless turn (``prompt``) or undo/rewind (``undo_request``: rewind turns or None for
    an undo, and whether to apply it), else the TUI (``first_prompt``: sent once the agent is ready); always stop all.
    ``link``: an agent from ``start_agent``; ``max_episodes``, ``timeout_s``, ``budget_tokens``,
    ``last_message_path``: the headless turn's bounds and its final answer's file (``Printer``); ``patch_path``: where
    the run's changes go as a patch (``PatchKeeper``)."""
    restore = restore_terminal
    # Here, not in start_agent: the sandbox probe's own orphan (bwrap's child) is not ours to reap.
    become_subreaper()
    if link is None:
        link = AgentProcess(options, log_path)
    else:
        link.configure(options)
    agent = link
    keeper: PatchKeeper | None = None

    def stop_everything() -> None:
        agent.shutdown()
        if keeper is not None:
            keeper.stop()
        on_stop()
        # The agent is reaped, so what is still below us is what an agent and executor killed together left to us (a
        # subreaper): an unsandboxed command's setsid children, which no cgroup may hold here (ADR 0065). Without a
        # child no /proc walk (ADR 0059).
        kill_strays(())
        reap_orphans()
        restore()

    def terminate(signum: int, frame: FrameType | None) -> None:
        # SIGTERM / SIGHUP: every child and every command's process group goes, then we do.
        stop_everything()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGHUP, terminate)
    try:
        if options.state_dir and (options.resume_id or options.continue_latest) and link.start_refused():
            # Lost the race for the session after the launch's check: refused as the launch refuses, exit 2.
            print(f"dashfloat: {session_in_use(options)}", file=sys.stderr)
            return EXIT_SESSION_REFUSED
        if undo_request is not None:
            from dashfloat.runtime._restore_cli import RestoreDriver

            return RestoreDriver(link, undo_request[0], undo_request[1]).run()
        if prompt is not None:
            from dashfloat.runtime._patch_link import PatchKeeper, skipped_paths
            from dashfloat.runtime.printer import EXIT_USAGE, Printer  # after the fork: the agent starts meanwhile

            if patch_path is not None:
                # The starting tree is kept before the prompt goes: nothing can have changed it yet.
                skip = skipped_paths(options.cwd, [patch_path, last_message_path, options.state_dir])
                keeper = PatchKeeper(options.cwd, skip, log_path, link.held_fds())
                why = keeper.baseline()
                if why:
                    print(f"dashfloat: --patch {patch_path}: {why}", file=sys.stderr)
                    return EXIT_USAGE
            release_free_heap()  # the configuration's and the imports' scratch
            printer = Printer(
                link,
                json_mode,
                verbose=verbose,
                max_episodes=max_episodes,
                timeout_s=timeout_s,
                last_message_path=last_message_path,
                budget_tokens=budget_tokens,
                patch=None if keeper is None or patch_path is None else (keeper, patch_path),
            )
            return printer.run(prompt)
        from dashfloat.config import shift_tab_all  # issue 37: read (and checked) by the launch already
        from dashfloat.ui import UiOptions, run_tui

        release_free_heap()

        ui_options = UiOptions(
            no_color=no_color,
            approval=options.approval,
            model=options.provider.model,
            cwd=options.cwd,
            notify=notify,
            first_prompt=first_prompt,
            modes_all=shift_tab_all(os.environ),
        )
        return run_tui(link, ui_options)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        stop_everything()
