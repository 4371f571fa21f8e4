"""DashFloat as a Harbor installed agent: ``harbor run --agent-import-path integrations.harbor.agent:DashFloat``.

Harbor (https://github.com/laude-institute/harbor, Python >= 3.12) calls ``setup`` -> ``install`` once per task
container, then ``run`` with the task's instruction, then ``populate_context_post_run`` on the host, whose
``logs_dir`` is the container's ``/logs/agent``. Kwargs (``--agent-kwarg key=value``):

- ``source``: what to install, a pip requirement (default: ``$DASHFLOAT_HARBOR_SOURCE``), e.g.
  ``git+https://example.org/you/dashfloat.git@main``; or ``wheel``: a wheel on the host, uploaded and installed.
- ``base_url``: the OpenAI-compatible endpoint (default: ``$OPENAI_BASE_URL``, or known from ``-m openai/…``).
- ``max_episodes``, ``timeout_s``: DashFloat's ``--max-episodes`` and ``--timeout`` for each task.

The logic lives in ``_command`` (tested without Harbor); this class only wires it to Harbor's hooks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

from integrations.harbor._command import (
    LOG_NAME,
    PASSED_ENV,
    AdapterError,
    RunSettings,
    install_script,
    model_and_base_url,
    parse_result,
    run_command,
)

CONTAINER_LOGS_DIR = "/logs/agent"
"""Harbor mounts the host's ``logs_dir`` here in the task container."""
WHEEL_DIR = "/installed-agent"


class DashFloat(BaseInstalledAgent):  # type: ignore[misc]  # Harbor ships no type information
    """Installs DashFloat in the task container and runs the task's instruction through ``dashfloat -p -``."""

    def __init__(
        self,
        *args: Any,
        source: str | None = None,
        wheel: str | None = None,
        base_url: str | None = None,
        max_episodes: int | str | None = None,
        timeout_s: float | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._wheel = Path(wheel) if wheel else None
        self._source = source or os.environ.get("DASHFLOAT_HARBOR_SOURCE", "")
        if self._wheel is None and not self._source:
            raise AdapterError("no DashFloat to install: pass --agent-kwarg source=REQUIREMENT or wheel=PATH")
        self._base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self._max_episodes = int(max_episodes) if max_episodes is not None else None
        self._timeout_s = float(timeout_s) if timeout_s is not None else None

    @staticmethod
    def name() -> str:
        return "dashfloat"

    def get_version_command(self) -> str | None:
        return "dashfloat --version"

    def parse_version(self, stdout: str) -> str:
        return stdout.strip().removeprefix("dashfloat ").strip()

    async def install(self, environment: BaseEnvironment) -> None:
        source = self._source
        if self._wheel is not None:
            target = f"{WHEEL_DIR}/{self._wheel.name}"
            await environment.upload_file(source_path=self._wheel, target_path=target)
            source = target
        await self.exec_as_root(environment, command=install_script(source))

    @with_prompt_template  # type: ignore[untyped-decorator]
    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        model, base_url = model_and_base_url(self.model_name, self._base_url)
        settings = RunSettings(
            model=model,
            base_url=base_url,
            max_episodes=self._max_episodes,
            timeout_s=self._timeout_s,
            logs_dir=CONTAINER_LOGS_DIR,
        )
        env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
        await self.exec_as_agent(environment, command=run_command(instruction, settings), env=env)

    def populate_context_post_run(self, context: AgentContext) -> None:
        try:
            text = (Path(self.logs_dir) / LOG_NAME).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return  # the run never started: nothing to report
        record = parse_result(text)
        if record is None:
            return
        context.n_input_tokens = record.usage.prompt_tokens  # OpenAI's prompt count includes the cached part
        context.n_cache_tokens = record.usage.cached_tokens
        context.n_output_tokens = record.usage.completion_tokens
        metadata = getattr(context, "metadata", None)
        if isinstance(metadata, dict):
            metadata["dashfloat"] = {
                "outcome": record.outcome,
                "exit_code": record.exit_code,
                "session_id": record.session_id,
                "episodes": record.episodes,
                "reasoning_tokens": record.usage.reasoning_tokens,
                "changed_paths": list(record.changed_paths),
            }
