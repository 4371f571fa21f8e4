"""The `dashfloat` command line: parse flags, resolve the provider, hand over to the runtime."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, NoReturn

from dashfloat import __version__
from dashfloat.catalogue import EXEC_TIMEOUT_DEFAULT_S, EXEC_TIMEOUT_MAX_S
from dashfloat.piped_input import (
    STDIN_FIRST_BYTE_WAIT_S,
    STDIN_PROMPT_MAX_BYTES,
    is_piped,
    read_piped,
    read_prompt,
    with_piped,
)
from dashfloat.terminal import hold_terminal

if TYPE_CHECKING:
    from dashfloat.executor import SandboxProbe
    from dashfloat.runtime import AgentProcess

EXIT_USAGE: Final = 2
EXIT_INTERRUPTED: Final = 130

SESSIONS_COMMAND: Final = "sessions"
REWIND_MAX_TURNS: Final = 999_999_999
"""The most --rewind N may ask for (no session holds as many turns; found by review: a number past the pipe's 64-bit
int was a traceback, as the UI's ``ui._commands.LIST_NUMBER_MAX_DIGITS``)."""
"""The one word that is a command, not a prompt: ``dashfloat sessions`` lists the saved sessions."""

_DESCRIPTION = "DashFloat: a coding agent in your terminal, for any OpenAI-compatible endpoint."
_EPILOG = """\
configuration: ~/.config/dashfloat/config.toml (see docs/providers.md); environment OPENAI_BASE_URL,
OPENAI_API_KEY, DASHFLOAT_PROVIDER, DASHFLOAT_MODEL. Flags win over the environment, which wins over the file.
With nothing configured DashFloat starts on its built-in offline demo model.
Flags are taken as written, never abbreviated; after `--` every word is the prompt (`dashfloat -- --help me`).

exit codes of a headless run (-p; docs/headless.md):
  0    completed
  1    provider or stream failure
  2    usage or config error
  3    a limit reached (--max-episodes, --timeout, --budget-tokens, or the agent's per-turn cap)
  4    a mutation refused by policy with nobody to ask
  130  interrupted (Ctrl-C; SIGTERM 143, SIGHUP 129)"""

MAX_EPISODES_MAX: Final = 1_000_000
"""The most --max-episodes may say (a bound, not a wish: the agent stops a turn after its own cap anyway)."""


def _episodes(text: str) -> int:
    """--max-episodes N: a whole number of model requests, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= MAX_EPISODES_MAX:
        raise argparse.ArgumentTypeError(f"needs 1 <= N <= {MAX_EPISODES_MAX}, not {value}")
    return value


BUDGET_TOKENS_MAX: Final = 10**12
"""The most --budget-tokens may say (far beyond any run; a typo of many zeros is refused, not waited out)."""


def _tokens(text: str) -> int:
    """--budget-tokens N: a whole number of tokens, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= BUDGET_TOKENS_MAX:
        raise argparse.ArgumentTypeError(f"needs 1 <= N <= {BUDGET_TOKENS_MAX}, not {value}")
    return value


def _seconds(text: str) -> float:
    """--timeout SECONDS: a positive, finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"needs a positive number of seconds, not {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Every flag, with one line of help each."""
    parser = argparse.ArgumentParser(
        prog="dashfloat",
        # Flags are taken as written only (`--base` is not `--base-url`), as Codex's and Claude Code's parsers do:
        # the early guesses in _entry.py and llm/_route.py read the flags before argparse, and agree with it.
        allow_abbrev=False,
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=lambda prog: argparse.RawDescriptionHelpFormatter(prog, max_help_position=30, width=110),
    )
    parser.add_argument("--version", action="version", version=f"dashfloat {__version__}")
    parser.add_argument(
        "words",
        nargs="*",
        metavar="PROMPT",
        help="start the TUI with this prompt sent (`dashfloat sessions`: list saved sessions instead)",
    )
    run = parser.add_argument_group("one turn without the TUI")
    run.add_argument("-p", "--print", dest="prompt", metavar="PROMPT", help="run one turn headless ('-' = stdin)")
    run.add_argument("--json", action="store_true", help="headless: display messages as JSON lines on stdout")
    run.add_argument(
        "-v", "--verbose", action="store_true", help="headless: a running command's output on stderr as it comes"
    )
    run.add_argument("--max-episodes", type=_episodes, metavar="N", help="headless: stop after N model requests")
    run.add_argument("--timeout", type=_seconds, metavar="SECONDS", help="headless: stop the whole run after SECONDS")
    run.add_argument("--budget-tokens", type=_tokens, metavar="N", help="headless: stop once the run's tokens pass N")
    run.add_argument(
        "--output-last-message", metavar="FILE", help="headless: write the final answer's text to FILE at the end"
    )
    run.add_argument("--patch", metavar="FILE", help="headless: write the run's changes to FILE as a git patch")
    policy = parser.add_argument_group("tools")
    policy.add_argument(
        "--approve",
        choices=("ask", "edits", "all", "plan"),
        default="ask",
        metavar="MODE",
        help="ask|edits|all|plan: what runs unasked (default ask; plan: nothing changes)",
    )
    policy.add_argument("-y", "--yes", action="store_true", help="same as --approve all")
    policy.add_argument("--cwd", metavar="DIR", help="working directory the tools are confined to (default: .)")
    policy.add_argument(
        "--sandbox",
        choices=("workspace-write", "read-only", "off"),
        default=None,
        metavar="MODE",
        help="confine commands: workspace-write (default), read-only, off",
    )
    # issue 35, ADR 0082: registries (the default) reach the package registries through the allowlisting proxy
    policy.add_argument(
        "--network",
        nargs="?",
        const="on",
        choices=("registries", "on", "off"),
        default=None,
        metavar="MODE",
        help="unasked commands' network: registries (default), on, off (approved: all)",
    )
    policy.add_argument(
        "--exec-timeout",
        type=float,
        default=EXEC_TIMEOUT_DEFAULT_S,
        metavar="SECONDS",
        help=f"execute_command timeout (default {EXEC_TIMEOUT_DEFAULT_S:g}; calls may ask {EXEC_TIMEOUT_MAX_S:g})",
    )
    model = parser.add_argument_group("model")
    model.add_argument("--provider", metavar="NAME", help="a provider named in config.toml")
    model.add_argument(
        "--base-url", metavar="URL", help="an OpenAI-compatible base URL, e.g. http://localhost:11434/v1"
    )
    model.add_argument("--model", metavar="NAME", help="the model to ask")
    model.add_argument(
        "--reasoning-effort",
        choices=("low", "medium", "high", "none"),
        metavar="EFFORT",
        help="low|medium|high|none (off): the request's reasoning_effort",
    )
    model.add_argument("--demo", action="store_true", help="use the built-in offline demo model")
    session = parser.add_argument_group("sessions")
    session.add_argument(
        "-c", "--continue", dest="continue_latest", action="store_true", help="resume the newest session here"
    )
    session.add_argument("-r", "--resume", metavar="ID", help="resume a session by id (a unique prefix is enough)")
    session.add_argument(
        "--session-id", metavar="ID", help="create or resume the session named ID (a retried job continues it)"
    )
    session.add_argument(
        "--undo", action="store_true", help="revert the last turn's file changes (preview; --yes applies it)"
    )
    session.add_argument(
        "--rewind", type=int, metavar="N", help="go back N turns: files and conversation (preview; --yes applies)"
    )
    parser.add_argument("--no-color", action="store_true", help="no colours (also when NO_COLOR is set)")
    parser.add_argument(
        "--no-notify", action="store_true", help="no bell or desktop notification when a key or a long turn waits"
    )
    return parser


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The flags, intermixed with the prompt's words (`dashfloat fix the typo --yes`, as `claude "…"` and `codex "…"`
    users type it). The first ``--`` ends the flags: what follows is the prompt, word for word (argparse's own ``--``
    in intermixed parsing depends on what came before it). The console script's early guesses read the flags up to
    it too (``_entry.sandbox_off``, ``llm._route.provider_flags``)."""
    at = list(argv).index("--") if "--" in argv else len(argv)
    args = build_parser().parse_intermixed_args(argv[:at])
    args.words = [*args.words, *argv[at + 1 :]]
    return args


def _terminal_both() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _fail(message: str) -> int:
    sys.stderr.write(f"dashfloat: {message}\n")
    return EXIT_USAGE


def _list_sessions() -> int:
    from dashfloat.sessions.log import list_sessions
    from dashfloat.sessions.state import sessions_dir

    skipped: list[str] = []
    sessions = list_sessions(sessions_dir(os.environ), skipped)
    for line in skipped:  # said, not silently left out (ADR 0058)
        sys.stderr.write(f"dashfloat: {line}\n")
    if not sessions:
        print("no saved sessions")
        return 0
    try:
        for info in sessions:
            print(f"{info.id}  {info.last_activity}  {info.messages:>4} msgs  {info.cwd}  {info.title}")
    except BrokenPipeError:
        # `dashfloat sessions | head -1`: the reader went away; quietly, as the headless printer leaves then.
        from dashfloat.runtime.printer import EXIT_BROKEN_PIPE

        return EXIT_BROKEN_PIPE
    return 0


def entry(agent: AgentProcess | None = None, sandbox_probe: SandboxProbe | None = None) -> NoReturn:
    """The console script and ``python -m dashfloat``: run, flush, and leave without interpreter teardown.
    ``agent``: forked early by ``dashfloat._entry``, before the configuration was read; ``sandbox_probe``: started
    there too.

    When ``main`` returns, the children are reaped (their session log is fsynced), the terminal is restored and
    the demo server stopped; what is left is flushing our own output. Tearing down the interpreter after that
    only frees memory the kernel frees anyway (40–80 ms, issue 19).
    """
    try:
        code = main(early_agent=agent, sandbox_probe=sandbox_probe)
    except KeyboardInterrupt:
        # Ctrl-C before the UI or the printer took over: whatever was started is stopped on the way out
        # (_launch, run); the shell's code for an interrupt, without a traceback.
        code = EXIT_INTERRUPTED
    with contextlib.suppress(OSError, ValueError):  # a closed stdout: the exit code already says so
        sys.stdout.flush()
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)


class _EarlyAgent:
    """An agent forked before the flags were parsed: the launch takes it; any other way out stops it. The sandbox
    probe started with it is collected by the launch; whatever way out, it is reaped at the end."""

    def __init__(self, link: AgentProcess | None, probe: SandboxProbe | None = None) -> None:
        self.link = link
        self.probe = probe

    def take(self) -> AgentProcess | None:
        link, self.link = self.link, None
        return link

    def stop(self) -> None:
        if (link := self.take()) is not None:
            link.shutdown()
        if self.probe is not None:
            self.probe.discard()  # collected already: nothing left to do


def main(
    argv: Sequence[str] | None = None,
    early_agent: AgentProcess | None = None,
    sandbox_probe: SandboxProbe | None = None,
) -> int:
    early = _EarlyAgent(early_agent, sandbox_probe)
    try:
        return _main(argv, early)
    finally:
        early.stop()  # a usage error, a --help, a Ctrl-C: the agent that waited for its options goes too


def _main(argv: Sequence[str] | None, early: _EarlyAgent) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.words == [SESSIONS_COMMAND] and "--" not in argv:  # `dashfloat -- sessions`: a prompt
        return _list_sessions()
    if not (math.isfinite(args.exec_timeout) and args.exec_timeout > 0):
        return _fail("--exec-timeout must be a positive number of seconds")
    for flag, value, what in (
        ("--model", args.model, "a model name"),
        ("--provider", args.provider, "a provider named in config.toml"),
        ("--base-url", args.base_url, "a URL"),
        ("--resume", args.resume, "a session id (dashfloat sessions lists them)"),
        ("--cwd", args.cwd, "a directory"),
    ):
        if value is not None and not value.strip():
            # Empty is not unset: falling back to the configured value would ask what was not asked for.
            return _fail(f"{flag} is empty: give {what}, or leave the flag out")
    if args.continue_latest and args.resume is not None:
        return _fail("--continue and --resume ID are two different requests: give one")
    cwd = Path(args.cwd or os.getcwd())
    if not cwd.is_dir():
        return _fail(f"--cwd {cwd}: not a directory")
    prompt: str | None = args.prompt
    if prompt == "-":
        whole = read_prompt(0)
        if whole is None:
            return _fail(f"the prompt on stdin is over {STDIN_PROMPT_MAX_BYTES} bytes")
        prompt = whole.decode("utf-8", errors="replace")
    elif prompt is not None and is_piped(0):
        piped = read_piped(0)
        if piped is None:
            sys.stderr.write(f"dashfloat: nothing on stdin within {STDIN_FIRST_BYTE_WAIT_S:g} s: not read\n")
        else:
            prompt = with_piped(prompt, piped)
    first_prompt = " ".join(args.words) if args.words else None
    if first_prompt is not None and (prompt is not None or args.undo or args.rewind is not None):
        return _fail("a PROMPT starts the TUI: give it alone, not with -p, --undo or --rewind")
    if (prompt is not None and not prompt.strip()) or (first_prompt is not None and not first_prompt.strip()):
        return _fail("the prompt is empty")
    if prompt is None and args.undo is False and args.rewind is None and not _terminal_both():
        return _fail("the TUI needs a terminal on stdin and stdout; in a script use -p PROMPT (or -p - for stdin)")
    if args.json and prompt is None:
        return _fail("--json needs -p PROMPT")
    for flag, value in (
        ("--max-episodes", args.max_episodes),
        ("--timeout", args.timeout),
        ("--budget-tokens", args.budget_tokens),
        ("--output-last-message", args.output_last_message),
        ("--patch", args.patch),
    ):
        if value is not None and prompt is None:
            return _fail(f"{flag} needs -p PROMPT")
    if args.output_last_message is not None:
        answer = Path(args.output_last_message)
        if answer.is_dir() or not answer.parent.is_dir():  # said now, not after the run the scheduler paid for
            return _fail(f"--output-last-message {answer}: a directory, or in a directory that does not exist")
    if args.patch is not None:
        patch = Path(args.patch)
        if patch.is_dir() or not patch.parent.is_dir():
            return _fail(f"--patch {patch}: a directory, or in a directory that does not exist")
    restore: tuple[int | None, bool] | None = None
    if args.undo or args.rewind is not None:
        if args.undo and args.rewind is not None:
            return _fail("--undo and --rewind N are two different requests: give one")
        if prompt is not None:
            return _fail("--undo / --rewind cannot be combined with -p")
        if args.rewind is not None and not 1 <= args.rewind <= REWIND_MAX_TURNS:
            return _fail(f"--rewind N needs 1 <= N <= {REWIND_MAX_TURNS} (the number of turns to go back)")
        restore = (args.rewind, args.yes)
    # First, before the heavy imports: keys typed while the TUI starts are held, not echoed (terminal.py).
    restore_terminal = hold_terminal(hold_keys=prompt is None and restore is None)
    try:
        return _launch(args, cwd, prompt, restore, restore_terminal, early, first_prompt)
    finally:
        restore_terminal()


def _launch(
    args: argparse.Namespace,
    cwd: Path,
    prompt: str | None,
    restore: tuple[int | None, bool] | None,
    restore_terminal: Callable[[], None],
    early: _EarlyAgent,
    first_prompt: str | None,
) -> int:
    from dashfloat.runtime import run, start_agent
    from dashfloat.sessions.state import LOG_FILENAME, ensure_private_dir, state_dir

    state = state_dir(os.environ)
    try:
        ensure_private_dir(state)  # the agent's log lives there
    except OSError as exc:
        return _fail(f"cannot create the state directory {state}: {exc}")
    log_path = str(state / LOG_FILENAME)
    # The agent first, then the configuration: its LLM worker imports the HTTP stack meanwhile (issue 19).
    link = early.take() or start_agent(log_path)
    try:
        from dashfloat.launch import Launch, LaunchError, prepare

        try:
            launch: Launch = prepare(args, str(cwd.resolve()), os.environ, link.held_fds(), early.probe)
        except LaunchError as exc:
            code = _fail(str(exc))  # said first: stopping the agent that waited for its options takes a moment
            link.shutdown()
            return code
    except BaseException:
        link.shutdown()  # Ctrl-C while reading the configuration: the agent and its worker go too
        raise
    options = launch.options
    if prompt is None and restore is None:  # the TUI: a person is there to grant a refused command a re-run (issue 35)
        import msgspec

        options = msgspec.structs.replace(options, sandbox=msgspec.structs.replace(options.sandbox, escalation=True))
    return run(
        options,
        log_path=log_path,
        link=link,
        prompt=prompt,
        first_prompt=first_prompt,
        json_mode=args.json,
        undo_request=restore,
        verbose=args.verbose,
        max_episodes=args.max_episodes,
        timeout_s=args.timeout,
        last_message_path=args.output_last_message,
        budget_tokens=args.budget_tokens,
        patch_path=None if args.patch is None else os.path.abspath(args.patch),
        notify=not args.no_notify,
        no_color=args.no_color or "NO_COLOR" in os.environ,
        on_stop=launch.stop,
        restore_terminal=restore_terminal,
    )
