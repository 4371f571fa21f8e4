"""Each process's import budget at idle: what it must not have imported, and why (issue 19: idle memory; ADR 0090).

One headless start (its request in flight) and one TUI start (its prompt shown) run under ``recorder.py``; then each
of their processes writes down its modules and who imported each. A rule broken names the process, the importer
chain (innermost first) and the rule's reason. To keep a new feature within the budget, import its heavy modules
where the feature is first used, not at the top of a module the process loads at start. A module that must come
after all goes to the table with its reason, in the same change.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import psutil
import pytest

from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event
from tests.e2e import tui_environment
from tests.pty_harness import Terminal

RECORDER = Path(__file__).with_name("recorder.py")
CHECKOUT = Path(__file__).resolve().parent.parent.parent
PROCESS_NAMES = {"dashfloat-agent": "agent", "dashfloat-llm": "llm", "dashfloat-exec": "executor"}
"""The children's names (``set_name``) and the table's name for each; the main process is ``main`` (headless) or
``tui``."""
START_WAIT_S = 30.0
"""How long a start may take to have its four processes up (a loaded machine with a cold page cache)."""
PROMPT_GLYPH = "❯"
AGENT, LLM, EXECUTOR, MAIN, TUI = "agent", "llm", "executor", "main", "tui"
EVERY = frozenset({AGENT, LLM, EXECUTOR, MAIN, TUI})
CHILDREN = frozenset({AGENT, LLM, EXECUTOR})


class Rule(NamedTuple):
    """``module`` (and its submodules) is not imported at idle in ``processes``, because of ``reason``."""

    module: str
    processes: frozenset[str]
    reason: str


BUDGET: tuple[Rule, ...] = (
    Rule("json", EVERY, "msgspec reads and writes every JSON we handle; the stdlib json costs ~1.4 ms (ADR 0055)"),
    Rule("dataclasses", EVERY, "each dataclass compiles its methods at import; use msgspec Structs (ADR 0055)"),
    Rule("inspect", EVERY - {TUI}, "it brings ast, dis and tokenize; only the TUI's asyncio needs it (ADR 0055)"),
    Rule("typing_extensions", EVERY, "msgspec takes what it needs from typing (KEPT_OUT_OF_MSGSPEC, ADR 0055)"),
    Rule("bz2", EVERY, "shutil names the archive formats only (KEPT_OUT_OF_SHUTIL, ADR 0061)"),
    Rule("lzma", EVERY, "shutil names the archive formats only (KEPT_OUT_OF_SHUTIL, ADR 0061)"),
    Rule("asyncio", EVERY - {TUI}, "an event loop is the TUI's (prompt_toolkit's); the others select on pipes"),
    Rule("mcp", EVERY, "the MCP host's SDK (with pydantic and anyio) loads when a server is configured (ADR 0086)"),
    Rule("pydantic", EVERY, "~10 MB of validators; only the MCP host may need it, and only when used"),
    Rule("http.server", EVERY, "a server for the demo and the tests only"),
    Rule("socketserver", EVERY, "a server for the demo and the tests only"),
    Rule("requests", EVERY - {LLM}, "only the LLM worker talks HTTP (ADR 0045)"),
    Rule("urllib3", EVERY - {LLM}, "only the LLM worker talks HTTP (ADR 0045)"),
    Rule("charset_normalizer", EVERY, "we decode every body ourselves: requests falls back to UTF-8 (ADR 0046)"),
    Rule("chardet", EVERY, "we decode every body ourselves: requests falls back to UTF-8 (ADR 0046)"),
    Rule("importlib.metadata", EVERY, "urllib3 asks for versions only to turn HTTP/2 on, which we never do (ADR 0046)"),
    Rule("calendar", EVERY, "the email package imports it for a function nothing calls (ADR 0056)"),
    Rule("prompt_toolkit", EVERY - {TUI}, "the UI is the TUI's; a headless run never draws"),
    Rule("prompt_toolkit.shortcuts", EVERY, "prompt sessions, dialogs and progress bars the UI never uses (ADR 0046)"),
    Rule("xml.dom.minidom", EVERY, "prompt_toolkit's HTML() parser, which the UI never calls (ADR 0053)"),
    Rule("wcwidth.grapheme", EVERY, "wcwidth's whole API: prompt_toolkit calls wcwidth.wcwidth only (ADR 0046)"),
    Rule("markdown_it", EVERY, "the TUI renders markdown from the first answer on, not at idle (ADR 0042)"),
    Rule("pygments", EVERY, "the first code block's lexer brings it; the theme writes its palette out (ADR 0042)"),
    Rule("difflib", frozenset({MAIN, TUI, LLM}), "for a misspelt command's suggestion, and the executor's edits"),
    Rule("traceback", CHILDREN, "imported only to print an error's traceback (ADR 0053)"),
    Rule("argparse", CHILDREN, "the command line is the main process's, read after the agent's fork (ADR 0049)"),
    Rule("dashfloat.sessions.log", frozenset({MAIN, TUI}), "a new session is the agent's to read and write (ADR 0090)"),
    Rule("dashfloat.executor._git_meta", frozenset({MAIN, TUI}), "the main process only probes the sandbox (ADR 0090)"),
    Rule("dashfloat.agent.undo", frozenset({AGENT}), "for /undo, /rewind and a write's checkpoint (ADR 0053)"),
    Rule("dashfloat.agent._restore", frozenset({AGENT}), "for /undo and /rewind (ADR 0053)"),
    Rule("dashfloat.agent._summary", frozenset({AGENT}), "for a tool's result (ADR 0053)"),
    Rule("dashfloat.agent._reports", frozenset({AGENT}), "for the reporting slash commands (ADR 0053)"),
    Rule("dashfloat.agent._replay", frozenset({AGENT}), "for a resumed session's replay (ADR 0053)"),
    Rule("dashfloat.agent._compactor", frozenset({AGENT}), "for a compaction (ADR 0053)"),
)

OPENSSL: tuple[str, ...] = ("_ssl", "_hashlib")
"""OpenSSL's two extension modules: loaded by the main process before it forks the agent (``preload_openssl``), so
its pages are shared by all four processes rather than copied into each (~1-1.5 MB a process)."""
OPENSSL_REASON = (
    "the main process loads OpenSSL before it forks the agent (dashfloat/_startup/openssl.py: preload_openssl), so "
    "that its pages are shared by all four processes rather than copied into each (~1-1.5 MB a process)"
)


class Imported(NamedTuple):
    """One module in one process: the process that imported it (its parent, before a fork, or itself) and how."""

    pid: int
    chain: str


Modules = dict[str, Imported]


def _read(path: Path) -> Modules:
    modules: Modules = {}
    for line in path.read_text().splitlines():
        name, pid, chain = line.split("\t")
        modules[name] = Imported(int(pid), chain)
    return modules


def _dump_all(root: int, directory: Path) -> dict[str, tuple[int, Modules]]:
    """Every process of the tree at ``root`` once all four are up, each as the table names it: its pid and modules."""
    deadline = time.monotonic() + START_WAIT_S
    while True:
        named = {PROCESS_NAMES.get(child.name(), ""): child.pid for child in psutil.Process(root).children()}
        named.pop("", None)
        agent = named.get(AGENT)
        if agent is not None:
            named.update({PROCESS_NAMES.get(c.name(), ""): c.pid for c in psutil.Process(agent).children()})
            named.pop("", None)
        if len(named) == len(CHILDREN) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(named) == len(CHILDREN), f"the start's processes did not all come up: {named}"
    named[MAIN] = root
    for pid in named.values():
        os.kill(pid, signal.SIGUSR1)
    found: dict[str, tuple[int, Modules]] = {}
    for name, pid in named.items():
        path = directory / str(pid)
        while not path.exists():
            assert time.monotonic() < deadline, f"{name} (pid {pid}) wrote no module list"
            time.sleep(0.05)
        found[name] = (pid, _read(path))
    return found


@pytest.fixture(scope="module")
def idle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[int, Modules]]]:
    """The modules of a headless start's four processes (its request in flight) and of a TUI start's main process."""
    tmp = tmp_path_factory.mktemp("budget")
    work = tmp / "work"
    work.mkdir()
    env = tui_environment(tmp)
    found: dict[str, tuple[int, Modules]] = {}
    with ScriptedServer() as server:
        args = ["--cwd", str(work), "--base-url", server.base_url, "--model", "m"]
        headless_dir, tui_dir = tmp / "headless", tmp / "tui"
        headless_dir.mkdir()
        tui_dir.mkdir()
        server.enqueue(Reply(body=[sse_event({"choices": []}), Pause(START_WAIT_S)]))
        seen = len(server.requests)
        run = subprocess.Popen(
            [sys.executable, str(RECORDER), str(headless_dir), *args, "-p", "wait"],
            cwd=CHECKOUT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            server.arrival(seen, START_WAIT_S)  # its request is in flight: the agent waits, as at idle
            found.update(_dump_all(run.pid, headless_dir))
        finally:
            run.kill()
            run.wait()
        term = Terminal([sys.executable, str(RECORDER), str(tui_dir), *args], env)
        try:
            assert term.wait_for(PROMPT_GLYPH, visible_only=True, timeout_s=START_WAIT_S), "the TUI showed no prompt"
            found[TUI] = _dump_all(term.pid, tui_dir)[MAIN]
        finally:
            term.close()
    yield found


def _matches(name: str, module: str) -> bool:
    return name == module or name.startswith(module + ".")


def broken(rule: Rule, processes: dict[str, tuple[int, Modules]]) -> list[str]:
    """One line per process that imported what ``rule`` keeps out: who imported it, and why it must not."""
    found = []
    for process in sorted(rule.processes & processes.keys()):
        pid, modules = processes[process]
        for name, imported in sorted(modules.items()):
            if _matches(name, rule.module):
                where = "" if imported.pid == pid else f" (before its fork, in process {imported.pid})"
                found.append(f"{process}: {imported.chain or '?'} imports {name}{where}: {rule.reason}")
                break
    return found


@pytest.mark.parametrize("rule", BUDGET, ids=[rule.module for rule in BUDGET])
def test_no_process_imports_at_idle_what_its_budget_keeps_out(rule: Rule, idle: dict[str, tuple[int, Modules]]) -> None:
    if found := broken(rule, idle):
        pytest.fail("\n".join(found), pytrace=False)


def test_openssl_is_loaded_once_before_the_agents_fork_and_shared_by_every_process(
    idle: dict[str, tuple[int, Modules]],
) -> None:
    """The OpenSSL preload (``dashfloat/_startup/openssl.py``): each process has OpenSSL, imported by the main
    process before the fork; imported after it, each process would hold a copy of its own."""
    main_pid = idle[MAIN][0]
    for process in (MAIN, AGENT, LLM, EXECUTOR):
        for module in OPENSSL:
            imported = idle[process][1].get(module)
            how = "never imported" if imported is None else f"imported after the agent's fork by {imported.chain}"
            assert imported is not None and imported.pid == main_pid, f"{process}: {module} {how}: {OPENSSL_REASON}"


def test_a_broken_rule_names_the_process_the_importer_chain_and_the_reason() -> None:
    rule = Rule("json", frozenset({AGENT, LLM}), "msgspec reads and writes every JSON we handle")
    processes = {
        AGENT: (10, {"json.decoder": Imported(1, "dashfloat/agent/_x.py:3 <- dashfloat/agent/_main.py:11")}),
        LLM: (11, {"json": Imported(11, "dashfloat/llm/textcalls.py:21")}),
    }
    assert broken(rule, processes) == [
        "agent: dashfloat/agent/_x.py:3 <- dashfloat/agent/_main.py:11 imports json.decoder (before its fork, in "
        "process 1): msgspec reads and writes every JSON we handle",
        "llm: dashfloat/llm/textcalls.py:21 imports json: msgspec reads and writes every JSON we handle",
    ]
    assert broken(rule, {AGENT: (10, {"jsonschema": Imported(10, "x.py:1")})}) == []  # a name, not a prefix


def test_the_recorder_names_the_importing_line_and_its_caller() -> None:
    from tests.startup.recorder import chain_of

    def importer() -> str:
        return chain_of(sys._getframe())

    chain = importer().split(" <- ")
    assert chain[0].endswith("test_import_budget.py:" + str(importer.__code__.co_firstlineno + 1))
    assert "test_import_budget.py" in chain[1]
