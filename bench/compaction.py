"""Long sessions (issue 15): tokens sent in a 200-round-trip session with and without compaction, the time
a /compact takes, and the request estimate's error against the provider's reported prompt_tokens."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

from bench.common import Figure
from dashfloat.agent import AgentOptions
from dashfloat.agent import _compaction as compaction
from dashfloat.agent import _context as ctx
from dashfloat.protocol import ChatMessage, CompactConversation, ProviderConfig, SubmitPrompt, TurnEnded
from dashfloat.runtime import AgentProcess
from dashfloat.testing.sse_server import Reply, ScriptedServer, count_tokens, text_reply, tool_calls_reply
from tests.e2e import collect, turn_over

WINDOW = 8192
CALLS_PER_PROMPT = 49  # + the answer: one turn's 50 requests
_MESSAGES = msgspec.json.Decoder(list[ChatMessage])


class _Model:
    """Reads big.txt CALLS_PER_PROMPT times per prompt; summarises when asked; reports usage like a server."""

    def __init__(self) -> None:
        self.per_prompt: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        usage = (count_tokens(body), 12)
        last = body["messages"][-1]
        if last["role"] == "user" and (last.get("content") or "").startswith(compaction.COMPACTION_PROMPT):
            return text_reply("- big.txt was read many times; nothing changed.", usage=usage)
        prompt = next(
            m["content"]
            for m in reversed(body["messages"])
            if m["role"] == "user" and not (m.get("content") or "").startswith(compaction.SUMMARY_HEADER)
        )
        with self.lock:
            n = self.per_prompt.get(prompt, 0)
            if n >= CALLS_PER_PROMPT:
                return text_reply("Done reading.", usage=usage)
            self.per_prompt[prompt] = n + 1
            call_id = f"read_{len(self.per_prompt)}_{n}"
        # the whole file each time, asked a little differently: the same call again is a loop the agent cuts (ADR 0079)
        return tool_calls_reply([(call_id, "read_file", {"path": "big.txt", "limit": 200 + n})], usage=usage)


def _session(
    root: Path, prompts: int, window: int | None, compact_samples: int
) -> tuple[list[dict[str, Any]], list[int], list[float]]:
    """Run ``prompts`` turns; returns the request bodies, the server's token counts, /compact durations."""
    tree = root / f"work-{window}"
    tree.mkdir()
    lines = [
        f"line {n}: alpha beta gamma delta epsilon zeta eta theta iota kappa {n * 7919 % 1000}" for n in range(150)
    ]
    (tree / "big.txt").write_text("\n".join(lines) + "\n")
    durations: list[float] = []
    with ScriptedServer() as server:
        server.handler = _Model()
        if window is not None:
            server.routes[("GET", "/props")] = (200, {"default_generation_settings": {"n_ctx": window}})
            server.window = window
        provider = ProviderConfig(
            name="local", base_url=server.base_url, model="local", context_window=None if window else 10_000_000
        )
        options = AgentOptions(provider=provider, cwd=str(tree), approval="all")
        link = AgentProcess(options, log_path=str(root / "bench.log"))
        try:
            for prompt in range(prompts):
                link.send(SubmitPrompt(text=f"read big.txt again ({prompt})"))
                collect(link, lambda m: isinstance(m, TurnEnded), timeout_s=600)
            for _ in range(compact_samples if window else 0):
                started = time.perf_counter()
                link.send(CompactConversation())
                collect(link, turn_over, timeout_s=120)
                durations.append(time.perf_counter() - started)
        finally:
            link.shutdown()
        return list(server.requests), list(server.prompt_tokens), durations


def _estimate_errors(bodies: list[dict[str, Any]], reported: list[int]) -> tuple[list[float], list[float]]:
    """Percent error of the calibrated estimate (the agent's rule) and of the raw one, request by request."""
    calibrated: list[float] = []
    raw: list[float] = []
    calibration: ctx.Calibration | None = None
    for body, tokens in zip(bodies, reported, strict=True):
        messages = _MESSAGES.decode(msgspec.json.encode(body["messages"]))
        calibrated.append(100 * abs(ctx.estimate(messages, calibration) - tokens) / tokens)
        raw.append(100 * abs(ctx.raw_request_tokens(messages) - tokens) / tokens)
        calibration = ctx.calibrate(messages, tokens)
    return calibrated, raw


def run(quick: bool) -> list[Figure]:
    prompts = 1 if quick else 4
    round_trips = prompts * (CALLS_PER_PROMPT + 1)
    with tempfile.TemporaryDirectory(prefix="dashfloat-bench-") as tmp:
        root = Path(tmp)
        bodies, tokens, compact_s = _session(root, prompts, WINDOW, 2 if quick else 5)
        plain_bodies, plain_tokens, _ = _session(root, prompts, None, 0)
    chat = [b for b in bodies if not (b["messages"][-1].get("content") or "").startswith(compaction.COMPACTION_PROMPT)]
    with_compaction = float(sum(tokens))
    without = float(sum(plain_tokens))
    calibrated, raw = _estimate_errors(bodies, tokens)
    over = sum(t > WINDOW for t in tokens)
    return [
        Figure(
            name=f"tokens sent in a {round_trips}-request session (150-line reads), {WINDOW}-token window",
            unit="tokens",
            samples=[with_compaction],
            baseline_name="the same session without compaction (no window)",
            baseline_samples=[without],
            target="fewer than without; no request over the window",
            met=with_compaction < without and over == 0,
            note=f"{len(bodies)} requests ({len(bodies) - len(chat)} of them summaries, {len(plain_bodies)} without "
            f"compaction); largest request {max(tokens)} tokens vs {max(plain_tokens)} without; {over} over the window",
        ),
        Figure(
            name="/compact (shrink + a streamed summary) to idle, real processes",
            unit="s",
            samples=compact_s,
            target="",
        ),
        Figure(
            name="request estimate error vs reported prompt_tokens (calibrated by the previous request)",
            unit="%",
            samples=calibrated,
            baseline_name="raw estimate (bytes / 3), no calibration",
            baseline_samples=raw,
            target="smaller than the raw estimate's",
            met=sorted(calibrated)[len(calibrated) // 2] < sorted(raw)[len(raw) // 2],
            note="the server counts words and punctuation (a tokenizer stand-in); the estimate never sees that rule",
        ),
    ]
