"""The race the launch's check leaves: a session taken by another process after that check and before the agent's own
lock. The agent never answers it with a new session: the run is refused with exit 2 naming the holder, headless and
in the TUI alike, having written no event and asked the model nothing.

The launch's check is what the race gets past, so the run here starts at ``runtime.run`` (after the launch), in this
process, while another process holds the session.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashfloat._startup.fork import FORK
from dashfloat.agent import AgentOptions
from dashfloat.protocol import ProviderConfig, SubmitPrompt, SystemEntry
from dashfloat.runtime import run
from dashfloat.sessions.state import SESSIONS_DIRNAME
from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.e2e import agent_tree, collect, turn_over

SESSION = "race-1"

HOLDER = """
import sys
from pathlib import Path
import msgspec
from dashfloat.sessions.log import SessionWriter, new_header
fresh = new_header(cwd=sys.argv[2], provider="p", model="m", dashfloat_version="0")
header = msgspec.structs.replace(fresh, id=sys.argv[3])
writer = SessionWriter.create(Path(sys.argv[1]), header)
print("held", flush=True)
sys.stdin.read()
writer.close()
"""


@pytest.fixture
def holder(tree: Path, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process writing session SESSION (it holds the session's lock until its stdin closes)."""
    sessions = tmp_path / "state" / SESSIONS_DIRNAME
    sessions.mkdir(parents=True)
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(sessions), str(tree), SESSION],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    yield process
    assert process.stdin is not None
    process.stdin.close()
    process.wait(timeout=30)
    process.stdout.close()


def run_apart(options: AgentOptions, **kwargs: Any) -> int:
    """``run`` in a forked child, as the main process it is: it makes itself a subreaper and at its end kills every
    process below it, which in this test process would be other tests' long-lived children (the LLM worker fixtures)."""
    child = FORK.Process(target=lambda: os._exit(run(options, **kwargs)))
    child.start()
    child.join()
    assert child.exitcode is not None
    return child.exitcode


def options(server: ScriptedServer, tree: Path, tmp_path: Path, **session: str | bool) -> AgentOptions:
    provider = ProviderConfig(name="scripted", base_url=server.base_url, model="m", context_window=100_000)
    return AgentOptions(provider=provider, cwd=str(tree), state_dir=str(tmp_path / "state"), **session)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("session", "prompt"),
    [
        ({"resume_id": SESSION}, "hi"),  # headless --session-id / --resume
        ({"continue_latest": True}, "hi"),  # headless --continue
        ({"resume_id": SESSION}, None),  # the TUI: refused before it starts
    ],
)
def test_a_session_taken_after_the_launchs_check_is_refused_with_exit_2(
    tree: Path,
    tmp_path: Path,
    holder: subprocess.Popen[str],
    capfd: pytest.CaptureFixture[str],
    session: dict[str, str | bool],
    prompt: str | None,
) -> None:
    with ScriptedServer() as server:
        server.enqueue(text_reply("should never be asked"))
        code = run_apart(
            options(server, tree, tmp_path, **session),
            log_path=str(tmp_path / "dashfloat.log"),
            prompt=prompt,
            json_mode=True,
        )
        assert server.requests == []
    out, err = capfd.readouterr()
    assert code == 2
    assert out == ""  # no event: the run never started
    assert f"dashfloat: session {SESSION} is in use by process {holder.pid} on " in err
    sessions = tmp_path / "state" / SESSIONS_DIRNAME
    assert sorted(p.name for p in sessions.iterdir()) == [f"{SESSION}.jsonl", f"{SESSION}.lock"]  # no new session


def test_a_free_session_is_resumed_as_before(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(text_reply("first."), text_reply("second."))
        log = str(tmp_path / "dashfloat.log")
        assert run_apart(options(server, tree, tmp_path), log_path=log, prompt="one", json_mode=True) == 0
        [saved] = (tmp_path / "state" / SESSIONS_DIRNAME).glob("*.jsonl")
        resumed = options(server, tree, tmp_path, resume_id=saved.stem)
        assert run_apart(resumed, log_path=log, prompt="two", json_mode=True) == 0
    assert [m["content"] for m in server.requests[1]["messages"] if m["role"] == "user"][-2:] == ["one", "two"]


TAKER = """
import sys
from pathlib import Path
from dashfloat.sessions.log import SessionWriter
writer, _ = SessionWriter.open_existing(Path(sys.argv[1]))
print("held", flush=True)
sys.stdin.read()
writer.close()
"""


def test_an_agent_whose_session_was_taken_while_it_was_down_is_not_restarted(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree, state_dir=tmp_path / "state") as link:
        server.enqueue(text_reply("first."))
        link.send(SubmitPrompt(text="one"))
        collect(link, turn_over)
        session_id = link.session_id
        os.kill(link.process.pid or 0, signal.SIGKILL)
        link.process.join()
        path = tmp_path / "state" / SESSIONS_DIRNAME / f"{session_id}.jsonl"
        with subprocess.Popen(
            [sys.executable, "-c", TAKER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        ) as taker:
            assert taker.stdout is not None and taker.stdout.readline() == "held\n"
            got = collect(link, lambda m: isinstance(m, SystemEntry) and "not restarting" in m.text)
            assert taker.stdin is not None
            taker.stdin.close()
        notices = [m.text for m in got if isinstance(m, SystemEntry) and m.level == "error"]
        assert "restarted it with your conversation" in notices[0]  # the first restart: its session was free
        assert f"its session {session_id} is now written by another process: not restarting it" in notices[-1]
        assert link.gave_up and len(notices) == 2
    assert len(server.requests) == 1
