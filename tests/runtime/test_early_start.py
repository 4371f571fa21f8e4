"""The agent forked before its options (issue 19): it serves once they come, and goes cleanly when they never do."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from dashfloat import cli
from dashfloat._startup.fork import FORK, start_sharing
from dashfloat._startup.kept_out import import_holding_sigint
from dashfloat.agent import LLM_PROCESS_NAME, AgentOptions
from dashfloat.demo import start_demo
from dashfloat.protocol import AgentReady, ProviderConfig, SubmitPrompt, SystemEntry, TokenReceived
from dashfloat.runtime import start_agent
from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.e2e import PROVIDER_VARIABLES, children_named, collect, outcome, turn_over, wait_for


def _options(server: ScriptedServer, cwd: Path) -> AgentOptions:
    provider = ProviderConfig(name="scripted", base_url=server.base_url, model="m", context_window=100_000)
    return AgentOptions(provider=provider, cwd=str(cwd))


def test_an_agent_started_before_its_options_serves_a_turn_once_configured(tree: Path) -> None:
    link = start_agent(str(tree.parent / "dashfloat.log"))
    try:
        # its LLM worker is forked before the options exist
        assert wait_for(lambda: len(children_named(link.pid or 0, LLM_PROCESS_NAME)) == 1)
        with ScriptedServer() as server:
            server.enqueue(text_reply("early"))
            link.configure(_options(server, tree))
            link.send(SubmitPrompt(text="hi"))
            got = collect(link, turn_over)
        assert any(isinstance(m, AgentReady) for m in got)
        assert "".join(m.text for m in got if isinstance(m, TokenReceived)) == "early"
        assert outcome(got) == "completed"
    finally:
        link.shutdown()


def test_the_options_are_given_once(tree: Path) -> None:
    link = start_agent("")
    try:
        with ScriptedServer() as server:
            link.configure(_options(server, tree))
            with pytest.raises(ValueError, match="already has its options"):
                link.configure(_options(server, tree))
    finally:
        link.shutdown()


def test_an_agent_whose_pipe_closes_before_its_options_leaves_with_its_worker(tree: Path) -> None:
    link = start_agent(str(tree.parent / "dashfloat.log"))
    try:
        assert wait_for(lambda: len(children_named(link.pid or 0, LLM_PROCESS_NAME)) == 1)
        [llm] = children_named(link.pid or 0, LLM_PROCESS_NAME)
        link.channel.close()  # what shutdown() does to an agent without options
        link.process.join(60)
        assert link.process.exitcode == 0  # it left on its own, not by the SIGKILL after shutdown's grace
        assert not llm.is_running()  # and killed and reaped its worker first
    finally:
        link.shutdown()


def test_shutdown_before_the_options_leaves_nothing_running(tree: Path) -> None:
    link = start_agent(str(tree.parent / "dashfloat.log"))
    assert wait_for(lambda: len(children_named(link.pid or 0, LLM_PROCESS_NAME)) == 1)
    [llm] = children_named(link.pid or 0, LLM_PROCESS_NAME)
    link.shutdown()
    assert link.process.exitcode is not None
    # Killed with the agent if the agent outlasted shutdown's grace on a loaded machine (parent-death signal).
    assert wait_for(lambda: not _alive(llm))


def _children() -> list[psutil.Process]:
    return list(psutil.Process().children(recursive=True))


def _alive(process: psutil.Process) -> bool:
    try:
        return bool(process.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def test_a_restarted_early_agent_gets_the_same_options(tree: Path) -> None:
    link = start_agent(str(tree.parent / "dashfloat.log"))
    try:
        with ScriptedServer() as server:
            link.configure(_options(server, tree))
            collect(link, lambda m: isinstance(m, AgentReady))
            os.kill(link.pid or 0, signal.SIGKILL)
            got = collect(link, lambda m: isinstance(m, AgentReady))
            assert any(isinstance(m, SystemEntry) and "restarted it" in m.text for m in got)
            server.enqueue(text_reply("again"))
            link.send(SubmitPrompt(text="hi"))
            got = collect(link, turn_over)
        assert "".join(m.text for m in got if isinstance(m, TokenReceived)) == "again"
    finally:
        link.shutdown()


def test_a_bad_config_stops_the_agent_forked_for_it(
    tmp_path: Path, isolated_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "cfg" / "dashfloat" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[providers.local]\nbase_url = 5\n")
    for name in ("XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, isolated_env[name])
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    before = {p.pid for p in _children()}
    assert cli.main(["--cwd", str(tmp_path), "-p", "hi"]) == cli.EXIT_USAGE
    expected = f"dashfloat: {config}: providers.local.base_url: expected a string, got an integer"
    assert capsys.readouterr().err.strip() == expected
    # the agent and its LLM worker were stopped (a zombie is left only if this process is some child's subreaper)
    assert wait_for(
        lambda: not [p for p in psutil.Process().children(recursive=True) if p.pid not in before and _alive(p)]
    )


def _report_freeze(conn: object) -> None:
    from multiprocessing.connection import Connection

    assert isinstance(conn, Connection)
    conn.send_bytes(str(gc.get_freeze_count()).encode())


def test_a_child_started_sharing_inherits_our_objects_frozen_and_we_do_not() -> None:
    ours, theirs = FORK.Pipe()
    process = FORK.Process(target=_report_freeze, args=(theirs,))
    start_sharing(process)
    theirs.close()
    frozen_in_child = int(ours.recv_bytes())
    process.join(30)
    assert frozen_in_child > 0  # its collector never visits what it inherited
    assert gc.get_freeze_count() == 0  # ours still does


def test_the_demo_server_forked_after_the_agent_holds_none_of_its_pipes() -> None:
    read_end, write_end = os.pipe()
    pipe = os.fstat(read_end).st_ino
    before = {p.pid for p in psutil.Process().children()}
    demo = start_demo({}, close_fds=[read_end, write_end])
    try:
        [server] = [p for p in psutil.Process().children() if p.pid not in before]
        held = {os.stat(f"/proc/{server.pid}/fd/{fd}").st_ino for fd in os.listdir(f"/proc/{server.pid}/fd")}
        assert pipe not in held  # our death still ends the agent's pipe
    finally:
        demo.stop()
        os.close(read_end)
        os.close(write_end)


def test_the_agent_imports_its_core_then_the_executors_code_before_its_options_come(tmp_path: Path) -> None:
    """ADR 0049: the core is ready when the options arrive (the discovery goes at once), and the executor's code
    follows it rather than sharing the agent's GIL with it. Observed by a finder that only records, installed in a
    fresh interpreter before it forks the agent (the forked agent inherits it); the options are never sent."""
    record = tmp_path / "imports"
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        f"record = Path({str(record)!r})\n"
        "WATCHED = ('dashfloat.agent._process', 'dashfloat.executor._serve')\n"
        "class Recorder:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name in WATCHED:\n"
        "            with record.open('a') as out:\n"
        "                out.write(name + '\\n')\n"
        "        return None\n"
        "sys.meta_path.insert(0, Recorder())\n"
        "from dashfloat.runtime import start_agent\n"
        f"link = start_agent({str(tmp_path / 'dashfloat.log')!r})\n"
        "deadline = time.monotonic() + 30\n"
        "while time.monotonic() < deadline and len(record.read_text().split() if record.exists() else []) < 2:\n"
        "    time.sleep(0.02)\n"
        "print(link.options is None, flush=True)\n"
        "link.shutdown()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "True"  # no options were ever sent
    assert record.read_text().split() == ["dashfloat.agent._process", "dashfloat.executor._serve"]


# Run as the console script runs, with a real SIGINT sent at the worst moment of the start: while msgspec's module
# initialisation imports datetime (it does not check that import; an interrupt lost there left msgspec without
# datetime's C API, and the first decoder built then segfaulted: ~1 run in 60 Ctrl-C'd early).
_CTRL_C_IN_MSGSPECS_INIT = """
import os, signal, sys
import dashfloat._entry as first

# As a terminal starts it: Ctrl-C handled, whatever this test process's own parent left (an ignored SIGINT is
# inherited across exec, and then the interrupt below would be ignored, not lost).
signal.signal(signal.SIGINT, signal.default_int_handler)

def importing(frame):
    names = []
    while frame is not None:
        if frame.f_code.co_name == "_find_and_load":
            names.append(frame.f_locals.get("name"))
        frame = frame.f_back
    return names

def tracer(frame, event, arg):
    if event == "call" and importing(frame)[:2] == ["datetime", "msgspec._core"]:
        sys.settrace(None)
        print("interrupting", flush=True)
        os.kill(os.getpid(), signal.SIGINT)
        return None
    return tracer

sys.argv = ["dashfloat", *sys.argv[1:]]
sys.settrace(tracer)
first.entry()
"""


def test_ctrl_c_while_msgspec_initialises_ends_the_start_cleanly(tree: Path, isolated_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_IN_MSGSPECS_INIT, "--cwd", str(tree), "-p", "hi"],
        env=isolated_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout == "interrupting\n"  # the interrupt was sent where it used to be lost
    assert (done.returncode, done.stderr) == (cli.EXIT_INTERRUPTED, "")


RECEIVED: list[int] = []
"""The SIGINTs the handler below saw (read by the module it imports)."""


def test_a_sigint_held_back_during_an_import_arrives_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sends_sigint.py").write_text(
        "import signal, threading\n"
        "from tests.runtime.test_early_start import RECEIVED\n"
        # To this thread: a process-directed one would go to another thread of pytest's, which does not hold it
        # (the console script holds it while it has no other thread).
        "signal.pthread_kill(threading.get_ident(), signal.SIGINT)\n"
        "SEEN_DURING = list(RECEIVED)  # an unheld signal's handler has run by this line\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    RECEIVED.clear()
    previous = signal.signal(signal.SIGINT, lambda signum, frame: RECEIVED.append(signum))
    try:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
        import_holding_sigint("sends_sigint")
        assert sys.modules["sends_sigint"].SEEN_DURING == []  # held back during the import
        assert RECEIVED == [signal.SIGINT]  # and delivered once it was over
        assert signal.pthread_sigmask(signal.SIG_BLOCK, set()) == mask  # the mask is as it was
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.modules.pop("sends_sigint", None)
