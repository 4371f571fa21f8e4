"""Slash commands: parsing (pure) and completion."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final, get_args

import msgspec
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from dashfloat.protocol import (
    ApprovalMode,
    ClearSession,
    CompactConversation,
    ExposeJob,
    ListPermissions,
    ListPrompts,
    ListSessions,
    PromptFile,
    ReasoningEffort,
    RemovePermission,
    ResumeSession,
    RewindTo,
    RunUserCommand,
    SavePermission,
    SetApproval,
    SetModel,
    ShowHooks,
    ShowMcp,
    ShowModels,
    ShowStatus,
    ShowUsage,
    StopJob,
    UiToAgent,
    UndoTurn,
)
from dashfloat.ui._jobs_view import job_action

COMMANDS: dict[str, tuple[str, str]] = {
    "/help": ("", "list these commands"),
    "/clear": ("", "start a new, empty session"),
    "/model": ("[NAME][@EFFORT]", "list the server's models; use NAME (and/or EFFORT) from the next request on"),
    "/approve": ("ask|edits|all|plan", "what runs without asking (plan: nothing changes)"),
    "/permissions": ("[remove N|save N]", "list the rules in force; remove one; save a session grant"),
    "/sessions": ("", "list saved sessions"),
    "/resume": ("ID", "resume a saved session (an id prefix is enough)"),
    "/hooks": ("[trust]", "the hooks in force and the project's untrusted ones; trust: run this project's"),
    "/mcp": ("[approve]", "MCP servers: state, tools, the tokens their schemas cost; approve: start the project's"),
    "/usage": ("", "context window, fill, and tokens of this session by turn"),
    "/status": ("", "provider, model, window, usage, approval mode, sandbox and session"),
    "/last": ("", "all of the newest tool result, or the newest change's whole diff (Ctrl-O)"),
    "/init": ("", "the model reads the project and proposes an AGENTS.md (its write preview asks first)"),
    "/compact": ("[FOCUS]", "summarise the older conversation now (FOCUS: what the summary keeps)"),
    "/undo": ("", "revert the files the last turn changed (preview first)"),
    "/rewind": ("[N]", "list prompts; with N, go back to just before prompt N (files and conversation)"),
    "/diff": ("", "what this session changed so far, file by file"),
    "/jobs": ("[stop N|expose N]", "background jobs; stop one; expose one's ports on this machine"),  # issue 36
    "/quit": ("", "quit DashFloat and say how to resume this session (also /q, /exit)"),
    "/exit": ("", "the same as /quit"),
}
QUIT_WORDS: Final = ("/quit", "/q", "/exit")
"""Every way to type quit (issue 37: /quit was an unknown command)."""
INIT_PROMPT: Final = (
    "Read this project (its README, build files, layout and tests; list directories and read files, run nothing "
    "that changes anything) and write an AGENTS.md at its root for coding agents: what the project is, how to build, "
    "test and lint it (the exact commands), the layout, and the conventions its code follows. Keep it short and "
    "specific to this project. If an AGENTS.md exists, propose an improved one instead. Write it with write_file."
)
"""What /init sends: a prompt, so the model's file goes through the normal write preview (issue 37)."""
APPROVAL_MODES: tuple[str, ...] = get_args(ApprovalMode)
EFFORTS: tuple[str, ...] = (*get_args(ReasoningEffort), "default")
"""What ``/model NAME@EFFORT`` takes; ``default``: back to config.toml's or ``--reasoning-effort``'s (ADR 0077)."""
EFFORT_MARK: Final = "@"
"""Starts the effort suffix: model ids hold ``:`` (Ollama tags) and ``/`` (OpenRouter), never a word after ``@``."""
MODEL_USAGE: Final = f"usage: /model [NAME][@{'|'.join(EFFORTS)}]"


class Send(msgspec.Struct, frozen=True):
    """Send this message to the agent."""

    message: UiToAgent


class ShowHelp(msgspec.Struct, frozen=True):
    """Show the command list."""


class ShowDiff(msgspec.Struct, frozen=True):
    """Show what this session changed (the UI has every change record)."""


class Exit(msgspec.Struct, frozen=True):
    """Quit the UI."""


class Prompt(msgspec.Struct, frozen=True):
    """Not a command: submit ``text`` as a prompt."""

    text: str
    shown: str = ""
    """What the transcript and the history show instead (``/init``), when not the text itself."""


class ShowLast(msgspec.Struct, frozen=True):
    """/last: the newest result in full (the UI has a change's diff; the agent has a result's output)."""


class Invalid(msgspec.Struct, frozen=True):
    """A one-line error to show."""

    error: str


class ShowJobs(msgspec.Struct, frozen=True):
    """/jobs: the background jobs the UI saw (issue 36; ``ui/_jobs_view.py``)."""


Parsed = Send | ShowHelp | ShowDiff | Exit | Prompt | Invalid | ShowLast | ShowJobs


def help_text(prompt_files: Sequence[PromptFile] = ()) -> str:
    """The /help listing, one command a line."""
    width = max(len(f"{n} {a}".strip()) for n, (a, _) in COMMANDS.items())
    lines = [f"{f'{n} {a}'.strip().ljust(width)}  {d}" for n, (a, d) in COMMANDS.items()]
    return "\n".join(
        [
            *lines,
            "!COMMAND".ljust(width) + "  run a shell command yourself; its output goes with your next prompt",
            "@PATH".ljust(width) + "  attach a file to your prompt (a directory: its listing); completed as you type",
            *(f"/{f.name} [args]".ljust(width) + f"  prompt file {f.source}" for f in prompt_files),
            "(start a prompt with // to send a literal leading /)",
        ]
    )


def expand_prompt_file(template: str, args: str) -> str:
    """A prompt file's text with ``$ARGUMENTS`` replaced by ``args`` (appended when it has no placeholder)."""
    if "$ARGUMENTS" in template:
        return template.replace("$ARGUMENTS", args)
    return f"{template.rstrip()}\n\n{args}" if args else template


SUGGEST_CUTOFF: Final = 0.7
"""How alike (difflib's ratio) a misspelt command must be to a known one to be named: a swapped or missing letter
(`/stauts`, `/hlep`) is over it, a word like no command (`/foo`, 0.6 to `/hooks`) under it."""
LIST_NUMBER_MAX_DIGITS: Final = 9
"""Digits of a number from a list (``/rewind N``, ``/permissions remove N``): more is no list's, and an int past the
pipe's 64 bits cannot be sent at all (found by review: ``/rewind 99999999999999999999`` raised in the UI)."""


def list_number(text: str) -> int | None:
    """``text`` as a number from a list: ASCII digits only (``"²".isdigit()`` holds, but ``int`` refuses it), at most
    LIST_NUMBER_MAX_DIGITS of them; else None."""
    if text.isascii() and text.isdigit() and len(text) <= LIST_NUMBER_MAX_DIGITS:
        return int(text)
    return None


def model_command(arg: str) -> Send | Invalid:
    """``/model [NAME][@EFFORT]``: the text after the last ``@`` is the effort when it is a word (``@high``); one
    that holds any other character is part of the name (Vertex's ``claude-3-5-sonnet@20240620``), and a trailing
    empty ``@`` keeps a name whose suffix is a word (``/model name@latest@``)."""
    if not arg:
        return Send(ShowModels())
    if " " in arg:
        return Invalid(f"{MODEL_USAGE} (a model name holds no space)")
    name, mark, effort = arg.rpartition(EFFORT_MARK)
    if not mark or (effort and not effort.isalpha()):
        return Send(SetModel(model=arg))
    if not effort:
        return Send(SetModel(model=name)) if name else Invalid(MODEL_USAGE)
    match effort.lower():
        case "low" | "medium" | "high" | "none" | "default" as known:
            return Send(SetModel(model=name, effort=known))
    return Invalid(f"/model: no reasoning effort {effort!r}; it takes {', '.join(EFFORTS)} ({MODEL_USAGE})")


def parse(text: str, prompt_files: Sequence[PromptFile] = ()) -> Parsed:
    """What submitting ``text`` means: a prompt, a slash command, or a prompt file (/NAME [args])."""
    stripped = text.strip()
    if stripped.startswith("!"):
        # !command: the user's own shell command, run by the executor; its output joins the next prompt
        command = stripped[1:].strip()
        return Send(RunUserCommand(command=command)) if command else Invalid("usage: !COMMAND (e.g. !git status)")
    if not stripped.startswith("/"):
        return Prompt(text)
    if stripped.startswith("//"):
        return Prompt(stripped[1:])
    name, _, rest = stripped.partition(" ")
    first_line_name = name.split("\n", 1)[0]
    if "/" in first_line_name[1:]:
        # A command's text kept after its usage error, with the next command typed on (ADR 0063): it would go to
        # the model as a prompt (a path's rule, below) though the user meant two commands.
        if (merged := "/" + first_line_name[1:].split("/", 1)[0]) in COMMANDS:
            return Invalid(f"{first_line_name} starts with the command {merged}: edit it (a prompt: start with //)")
        return Prompt(text)  # a path (a pasted "/home/me/app.py:3: error"), never a command: no name holds a "/"
    arg = rest.strip()
    match name:
        case "/help":
            return ShowHelp()
        case "/quit" | "/q" | "/exit":
            return Exit() if not arg else Invalid(f"usage: {name} (it takes no argument)")
        case "/last":
            return ShowLast() if not arg else Invalid("usage: /last (it takes no argument)")
        case "/init":
            return Prompt(INIT_PROMPT, shown="/init") if not arg else Invalid("usage: /init (it takes no argument)")
        case "/mcp":  # MCP client (ADR 0086)
            if arg in ("", "approve"):
                return Send(ShowMcp(approve=arg == "approve"))
            return Invalid("usage: /mcp [approve]")
        case "/status":
            return Send(ShowStatus())
        case "/diff":
            return ShowDiff()
        case "/jobs":  # background jobs (issue 36)
            if not arg:
                return ShowJobs()
            action = job_action(arg)
            if isinstance(action, str):
                return Invalid(action)
            return Send(StopJob(job_id=action[1]) if action[0] == "stop" else ExposeJob(job_id=action[1]))
        case "/clear":
            return Send(ClearSession())
        case "/sessions":
            return Send(ListSessions())
        case "/usage":
            return Send(ShowUsage())
        case "/undo":
            return Send(UndoTurn()) if not arg else Invalid("usage: /undo (it takes no argument)")
        case "/rewind":
            if not arg:
                return Send(ListPrompts())
            if (n := list_number(arg)) is not None and n > 0:
                return Send(RewindTo(prompt=n))
            return Invalid("usage: /rewind [N] (N: a prompt number from the /rewind list)")
        case "/permissions":
            verb, _, number = arg.partition(" ")
            if not arg:
                return Send(ListPermissions())
            if verb in ("remove", "save") and (n := list_number(number.strip())) is not None:
                return Send(RemovePermission(number=n) if verb == "remove" else SavePermission(number=n))
            return Invalid("usage: /permissions [remove N|save N] (N from the /permissions list)")
        case "/hooks":  # hooks (ADR 0088)
            if arg in ("", "trust"):
                return Send(ShowHooks(trust=arg == "trust"))
            return Invalid("usage: /hooks [trust]")
        case "/compact":
            return Send(CompactConversation(focus=arg))
        case "/model":
            return model_command(arg)
        case "/resume":
            return Send(ResumeSession(session_id=arg)) if arg else Invalid("usage: /resume ID")
        case "/approve":
            match arg:
                case "ask" | "edits" | "all" | "plan":
                    return Send(SetApproval(mode=arg))
            return Invalid(f"usage: /approve {'|'.join(APPROVAL_MODES)}")
        case _ if any(f"/{f.name}" == name for f in prompt_files):
            [found] = [f for f in prompt_files if f"/{f.name}" == name][:1]
            return Prompt(expand_prompt_file(found.text, arg))
        case _:
            import difflib  # only for a misspelt command: the TUI's idle memory (ADR 0053)

            known = [*COMMANDS, *(f"/{f.name}" for f in prompt_files)]
            closest = difflib.get_close_matches(name, known, n=1, cutoff=SUGGEST_CUTOFF)
            hint = f" — did you mean {closest[0]}?" if closest else ""
            return Invalid(f"unknown command {name}{hint} (/help lists them)")


class SlashCompleter(Completer):
    """Completes command names (and prompt files) after a leading ``/`` and the /approve modes."""

    def __init__(
        self,
        prompt_files: Callable[[], Sequence[PromptFile]] = lambda: (),
        models: Callable[[], Sequence[str]] = lambda: (),
    ) -> None:
        self.prompt_files = prompt_files
        self.models = models
        """The server's models, once the agent has them (/model lists them first): /model completes them."""

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        if " " not in text:
            for name, (arg, doc) in COMMANDS.items():
                if name.startswith(text):
                    yield Completion(name, start_position=-len(text), display_meta=f"{arg} {doc}".strip())
            for prompt_file in self.prompt_files():
                name = f"/{prompt_file.name}"
                if name.startswith(text) and name not in COMMANDS:
                    yield Completion(name, start_position=-len(text), display_meta="[args] prompt file")
            return
        name, _, arg = text.partition(" ")
        if name == "/approve" and " " not in arg:
            for mode in APPROVAL_MODES:
                if mode.startswith(arg):
                    yield Completion(mode, start_position=-len(arg))
        if name == "/model" and " " not in arg and EFFORT_MARK in arg:
            typed = arg.rpartition(EFFORT_MARK)[2]
            for effort in EFFORTS:
                if effort.startswith(typed):
                    yield Completion(effort, start_position=-len(typed), display_meta="reasoning effort")
        if name == "/model" and " " not in arg:
            for model in self.models():
                if model.startswith(arg):
                    yield Completion(model, start_position=-len(arg))
