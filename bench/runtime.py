"""Runtime figures: pipe round trip, the agent loop's own cost, headless turns as the peers measured, memory."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

import psutil
import requests

from bench.common import TOKEN_CHARS, Figure, distinct_token
from dashfloat.channel import Channel
from dashfloat.executor import run_tool
from dashfloat.protocol import AgentToUi, Cancel, PhaseChanged, SubmitPrompt, TokenReceived, UiToAgent
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event, text_reply, tool_calls_reply
from tests.e2e import agent_tree, collect, dashfloat_argv, fresh_conversation, turn_over

FLOOR = [sys.executable, "-c", "import prompt_toolkit, requests, msgspec"]
PROVIDER_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream", "Accept-Encoding": "identity"}
"""What the LLM process sends with a request (dashfloat/llm/_stream.py), for the request the bench makes directly."""
CONTEXT = multiprocessing.get_context("fork")


def _echo(conn: Connection, raw: bool) -> None:
    channel = Channel[UiToAgent](conn, UiToAgent, "bench")
    while True:
        try:
            if raw:
                frame = conn.recv_bytes()
                if frame == b"stop":
                    return
                conn.send_bytes(frame)
            else:
                message = channel.recv()
                if isinstance(message, SubmitPrompt) and message.text == "stop":
                    return
                channel.send(TokenReceived(text="pong"))
        except EOFError:
            return


def _pipe_round_trips(n: int, raw: bool) -> tuple[list[float], float]:
    ours, theirs = CONTEXT.Pipe()
    child = CONTEXT.Process(target=_echo, args=(theirs, raw), daemon=True)
    child.start()
    channel = Channel[AgentToUi](ours, AgentToUi, "bench")
    ping = SubmitPrompt(text="ping")
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        if raw:
            ours.send_bytes(b"\x82\xa4type\xadsubmit_prompt\xa4text\xa4ping")
            ours.recv_bytes()
        else:
            channel.send(ping)
            channel.recv()
        samples.append((time.perf_counter() - started) * 1e6)
    # throughput: a burst of n messages one way, each answered; pipelined in windows of 64
    started = time.perf_counter()
    for _ in range(n // 64):
        for _ in range(64):
            if raw:
                ours.send_bytes(b"\x82\xa4type\xadsubmit_prompt\xa4text\xa4ping")
            else:
                channel.send(ping)
        for _ in range(64):
            ours.recv_bytes() if raw else channel.recv()
    rate = (n // 64) * 64 / (time.perf_counter() - started)
    if raw:
        ours.send_bytes(b"stop")
    else:
        channel.send(SubmitPrompt(text="stop"))
    child.join(2)
    return samples, rate


def pipe_figures(quick: bool) -> list[Figure]:
    n = 2000 if quick else 20000
    typed, typed_rate = _pipe_round_trips(n, raw=False)
    raw, raw_rate = _pipe_round_trips(n, raw=True)
    p99 = sorted(typed)[int(0.99 * len(typed))]
    return [
        Figure(
            "pipe round trip, small message (msgspec Channel)",
            "µs",
            typed,
            baseline_name="raw send_bytes/recv_bytes",
            baseline_samples=raw,
            note=f"p99 {p99:.1f} µs over {n} round trips",
        ),
        Figure(
            "pipe throughput, small messages (windows of 64)",
            "msg/s",
            [typed_rate],
            baseline_name="raw bytes",
            baseline_samples=[raw_rate],
        ),
    ]


def _timed(samples: int, step: Callable[[], object], warm_up: bool = True) -> list[float]:
    if warm_up:
        step()
    out = []
    for _ in range(samples):
        started = time.perf_counter()
        step()
        out.append((time.perf_counter() - started) * 1000)
    return out


def loop_overhead(quick: bool) -> list[Figure]:
    """Wall time a tool round trip adds beyond the provider's request and the tool's own run: a turn with one
    read_file, minus a turn without one, minus the same request made directly, minus read_file run directly. Round
    after round the four take turns (the machine's noise falls on all of them alike), and each turn starts a fresh
    conversation, so every request is the size of the one made directly."""
    rounds = 20 if quick else 100
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "work"
        root.mkdir()
        (root / "small.py").write_text("print('hello')\n" * 20)
        with (
            ScriptedServer() as server,
            agent_tree(server, root, approval="all") as link,
            requests.Session() as session,
        ):
            collect(link, lambda m: type(m).__name__ == "AgentReady")

            def plain_turn() -> None:
                server.enqueue(text_reply("ok"))
                link.send(SubmitPrompt(text="x"))
                collect(link, turn_over)

            def tool_turn() -> None:
                server.enqueue(tool_calls_reply([("c", "read_file", {"path": "small.py"})]), text_reply("ok"))
                link.send(SubmitPrompt(text="x"))
                collect(link, turn_over)

            fresh_conversation(link)
            tool_turn()  # warm-up: connects; its first request is the one made directly below
            body = json.dumps(server.requests[-2], separators=(",", ":")).encode()
            url = f"{server.base_url}/chat/completions"

            def provider_request() -> None:
                server.enqueue(text_reply("ok"))
                with session.post(url, data=body, headers=PROVIDER_HEADERS, stream=True) as response:
                    for _ in response.iter_content(None):
                        pass

            def read_file() -> None:
                run_tool("read_file", {"path": "small.py"}, str(root), 30.0)

            plain: list[float] = []
            tool: list[float] = []
            provider: list[float] = []
            tool_own: list[float] = []
            provider_request()  # warm-up: the bench's own connection
            for n in range(rounds):
                turns = [(plain_turn, plain), (tool_turn, tool)]
                for step, samples in turns if n % 2 else reversed(turns):
                    fresh_conversation(link)
                    samples.extend(_timed(1, step, warm_up=False))
                provider.extend(_timed(1, provider_request, warm_up=False))
                tool_own.extend(_timed(1, read_file, warm_up=False))
    overhead = [t - p - r - o for t, p, r, o in zip(tool, plain, provider, tool_own, strict=True)]
    return [
        Figure(
            "agent-loop overhead per tool round trip",
            "ms",
            overhead,
            target="≤ 5 ms median",
            met=statistics.median(overhead) <= 5.0,
            note=(
                f"per round: turn with one read_file − plain turn − the same provider request made directly − "
                f"read_file itself (medians {statistics.median(tool):.2f} − {statistics.median(plain):.2f} − "
                f"{statistics.median(provider):.2f} − {statistics.median(tool_own):.3f} ms); {rounds} rounds taking "
                "turns, each turn in a fresh conversation; in-process agent tree, instant provider"
            ),
        ),
        Figure("in-process turn, no tools (agent tree + LLM + server)", "ms", plain),
    ]


def cancel_latency(quick: bool) -> list[Figure]:
    """Esc to idle: while streaming (the stream is closed) and while a command runs (its group is killed)."""
    n = 5 if quick else 20
    streaming: list[float] = []
    running: list[float] = []
    chunk = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "work"
        root.mkdir()
        with ScriptedServer() as server, agent_tree(server, root, approval="all") as link:
            for _ in range(n):
                server.enqueue(Reply(body=[sse_event(chunk), Pause(30)]))
                link.send(SubmitPrompt(text="x"))
                collect(link, lambda m: isinstance(m, TokenReceived))
                started = time.perf_counter()
                link.send(Cancel())
                collect(link, turn_over)
                streaming.append((time.perf_counter() - started) * 1000)
                server.enqueue(tool_calls_reply([("c", "execute_command", {"command": "sleep 30"})]))
                link.send(SubmitPrompt(text="y"))
                collect(link, lambda m: isinstance(m, PhaseChanged) and m.phase == "running")
                time.sleep(0.05)
                started = time.perf_counter()
                link.send(Cancel())
                collect(link, turn_over)
                running.append((time.perf_counter() - started) * 1000)
    return [
        Figure(
            "cancel while streaming → idle",
            "ms",
            streaming,
            target="≤ 200 ms",
            met=max(streaming) <= 200,
        ),
        Figure("cancel while a command runs → idle", "ms", running, target="≤ 200 ms", met=max(running) <= 200),
    ]


def _headless(server: ScriptedServer, cwd: Path, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    argv = dashfloat_argv(server, cwd, *args)
    # stdin /dev/null: a piped stdin would be read (and an open, silent one waited for) as the prompt's input
    return subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _tree_memory(pid: int) -> tuple[float, float]:
    """Summed RSS and PSS (MB) of a process and its descendants."""
    rss = pss = 0.0
    root = psutil.Process(pid)
    for process in [root, *root.children(recursive=True)]:
        try:
            info = process.memory_full_info()
        except psutil.Error:
            continue
        rss += info.rss / 2**20
        pss += getattr(info, "pss", info.rss) / 2**20
    return rss, pss


def _write_session(directory: Path, cwd: Path, messages: int) -> int:
    """A realistic saved session of ``messages`` messages for ``cwd``; returns its size in bytes."""
    from bench.sessions import _conversation
    from dashfloat.sessions.log import SessionWriter, new_header
    from dashfloat.sessions.state import ensure_private_dir

    ensure_private_dir(directory)
    header = new_header(cwd=cwd, provider="scripted", model="m", dashfloat_version="bench")
    with SessionWriter.create(directory, header) as writer:
        writer.append_many(_conversation(messages))
        return writer.path.stat().st_size


def headless_figures(quick: bool) -> list[Figure]:
    runs = 3 if quick else 7
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "work"
        root.mkdir()
        (root / "a.txt").write_text("hello\n")
        env = {**os.environ, "XDG_STATE_HOME": f"{tmp}/state", "XDG_CONFIG_HOME": f"{tmp}/cfg"}
        floor = _timed(runs, lambda: subprocess.run(FLOOR, check=True))
        first: list[float] = []
        short: list[float] = []
        tool: list[float] = []
        stream: list[float] = []
        peak_rss: list[float] = []
        tokens = 20_000
        # one token per delta, never repeating (the repetition guard stops one repeated word)
        big = "".join(distinct_token(i) for i in range(tokens))
        with ScriptedServer() as server:
            for _ in range(runs + 1):
                server.enqueue(text_reply("hi"))
                seen = len(server.requests)
                started = time.perf_counter()
                main = _headless(server, root, env, "-p", "hello")
                first.append((server.arrival(seen, 10) - started) * 1000)
                main.wait(20)
                short.append((time.perf_counter() - started) * 1000)
                server.enqueue(tool_calls_reply([("c", "read_file", {"path": "a.txt"})]), text_reply("ok"))
                started = time.perf_counter()
                _headless(server, root, env, "-p", "read").wait(20)
                tool.append((time.perf_counter() - started) * 1000)
                server.enqueue(text_reply(big, chunk_size=TOKEN_CHARS))
                started = time.perf_counter()
                main = _headless(server, root, env, "--json", "-p", "stream")
                peak = 0.0
                while main.poll() is None:
                    with contextlib.suppress(psutil.Error):
                        peak = max(peak, _tree_memory(main.pid)[0])
                    time.sleep(0.05)
                stream.append((time.perf_counter() - started) * 1000)
                if main.returncode != 0:  # a stream the provider or a guard cut short is not a throughput figure
                    raise RuntimeError(f"the 20k-token stream turn failed (exit {main.returncode})")
                peak_rss.append(peak)
            server.enqueue(Reply(body=[sse_event({"choices": []}), Pause(3.0)]))
            idle = _headless(server, root, env, "-p", "wait")
            time.sleep(1.5)
            idle_rss, idle_pss = _tree_memory(idle.pid)
            idle.kill()
            idle.wait()
            session_bytes = _write_session(Path(tmp) / "state" / "dashfloat" / "sessions", root, 2000)
            server.enqueue(Reply(body=[sse_event({"choices": []}), Pause(3.0)]))
            resumed = _headless(server, root, env, "--continue", "-p", "wait")
            time.sleep(1.5)
            big_rss, big_pss = _tree_memory(resumed.pid)
            resumed.kill()
            resumed.wait()
    drop = slice(1, None)  # the first run warms the page cache
    # the stream's own share: a 20k-token turn minus a short turn of the same run (start-up, connect, exit)
    short_median = statistics.median(short[drop])
    throughput = [tokens / max(1e-3, (ms - short_median) / 1000) for ms in stream[drop]]
    return [
        Figure("interpreter floor: python -c 'import prompt_toolkit, requests, msgspec'", "ms", floor),
        *(
            Figure(
                name,
                "ms",
                samples,
                "interpreter floor",
                floor,
                target=f"< {codex} ms (Codex CLI)",
                met=statistics.median(samples) < codex,
            )
            for name, samples, codex in (
                ("headless: first request reaches the provider", first[drop], 250),
                ("headless: short turn", short[drop], 350),
                ("headless: turn with one tool round trip", tool[drop], 410),
                ("headless --json: 20k-token stream turn", stream[drop], 720),
            )
        ),
        Figure(
            "headless --json: stream throughput, server → LLM → agent → stdout",
            "tokens/s",
            throughput,
            target="≥ 50 000 tokens/s",
            met=statistics.median(throughput) >= 50_000,
            note="20 000 one-token deltas; time of the stream turn minus the short turn's median",
        ),
        Figure(
            "peak summed RSS of all processes during the 20k stream",
            "MB",
            peak_rss[drop],
            target="< 146 MB (Codex CLI's top process)",
            met=statistics.median(peak_rss[drop]) < 146,
        ),
        Figure(
            "idle summed RSS (main + agent + LLM + executor)",
            "MB",
            [idle_rss],
            target="≤ 120 MB",
            met=idle_rss <= 120,
            note=f"PSS {idle_pss:.1f} MB (forked processes share pages)",
        ),
        Figure(
            "summed RSS with a resumed 2 000-message session, mid-request",
            "MB",
            [big_rss],
            "idle",
            [idle_rss],
            target="growth bounded by the conversation's own size",
            met=(big_rss - idle_rss) <= 8 * session_bytes / 2**20 + 8,
            note=(
                f"session file {session_bytes / 2**20:.2f} MiB; growth {big_rss - idle_rss:.1f} MB (bound: 8× the file "
                f"+ 8 MB: the agent's objects and one encoded request in the agent and the LLM); PSS {big_pss:.1f} MB"
            ),
        ),
    ]


def run(quick: bool) -> list[Figure]:
    return [*pipe_figures(quick), *loop_overhead(quick), *cancel_latency(quick), *headless_figures(quick)]


__all__ = ["run"]
