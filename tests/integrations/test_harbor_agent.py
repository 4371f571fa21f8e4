"""The Harbor agent class wired to Harbor's hooks. Harbor needs Python >= 3.12 and is not installed here, so the
hooks are driven through a stand-in of the four Harbor names the class imports (the same signatures as Harbor's
``harbor.agents.installed.base``); where the real Harbor imports, the class is checked against it as well."""

from __future__ import annotations

import asyncio
import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from integrations.harbor._command import LOG_NAME, AdapterError, RunSettings, install_script, run_command

FIXTURE = Path(__file__).parent / "fixtures" / "dashfloat-json-run.jsonl"

_STAND_IN = {
    "harbor/__init__.py": "",
    "harbor/agents/__init__.py": "",
    "harbor/agents/installed/__init__.py": "",
    "harbor/agents/installed/base.py": """
        from pathlib import Path

        def with_prompt_template(fn):
            return fn

        class BaseInstalledAgent:
            def __init__(self, logs_dir, model_name=None, **kwargs):
                self.logs_dir = Path(logs_dir)
                self.model_name = model_name
                self.execs = []

            async def exec_as_root(self, environment, command, env=None, cwd=None, timeout_sec=None):
                self.execs.append(("root", command, env))

            async def exec_as_agent(self, environment, command, env=None, cwd=None, timeout_sec=None):
                self.execs.append(("agent", command, env))
    """,
    "harbor/environments/__init__.py": "",
    "harbor/environments/base.py": """
        class BaseEnvironment:
            def __init__(self):
                self.uploads = []

            async def upload_file(self, source_path, target_path):
                self.uploads.append((source_path, target_path))
    """,
    "harbor/models/__init__.py": "",
    "harbor/models/agent/__init__.py": "",
    "harbor/models/agent/context.py": """
        class AgentContext:
            def __init__(self):
                self.n_input_tokens = None
                self.n_cache_tokens = None
                self.n_output_tokens = None
                self.cost_usd = None
                self.metadata = {}
    """,
}


@pytest.fixture
def harbor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """``integrations.harbor.agent`` imported against the stand-in; both forgotten afterwards."""
    root = tmp_path / "stand-in"
    for name, text in _STAND_IN.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(root))
    saved = {k: v for k, v in sys.modules.items() if k == "harbor" or k.startswith("harbor.")}
    for name in saved:
        del sys.modules[name]
    try:
        yield importlib.import_module("integrations.harbor.agent")
    finally:
        for name in [k for k in sys.modules if k == "harbor" or k.startswith("harbor.")]:
            del sys.modules[name]
        sys.modules.pop("integrations.harbor.agent", None)
        sys.modules.update(saved)


def test_install_uploads_a_wheel_and_installs_it(harbor: ModuleType, tmp_path: Path) -> None:
    wheel = tmp_path / "dashfloat-0.1.0-py3-none-any.whl"
    agent = harbor.DashFloat(logs_dir=tmp_path, model_name="openai/gpt-4.1", wheel=str(wheel))
    environment = sys.modules["harbor.environments.base"].BaseEnvironment()
    asyncio.run(agent.install(environment))
    target = f"/installed-agent/{wheel.name}"
    assert environment.uploads == [(wheel, target)]
    assert agent.execs == [("root", install_script(target), None)]
    assert agent.name() == "dashfloat" and agent.parse_version("dashfloat 0.1.0\n") == "0.1.0"


def test_run_sends_the_instruction_with_the_providers_variables(
    harbor: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("UNRELATED_SECRET", "no")
    agent = harbor.DashFloat(
        logs_dir=tmp_path, model_name="openai/gpt-4.1", source="dashfloat==0.1.0", max_episodes="40"
    )
    context: Any = sys.modules["harbor.models.agent.context"].AgentContext()
    asyncio.run(agent.run("Fix the tests.", object(), context))
    settings = RunSettings(
        model="gpt-4.1", base_url="https://api.openai.com/v1", max_episodes=40, logs_dir="/logs/agent"
    )
    assert agent.execs == [("agent", run_command("Fix the tests.", settings), {"OPENAI_API_KEY": "sk-test"})]


def test_usage_is_read_back_from_the_result_record(harbor: ModuleType, tmp_path: Path) -> None:
    agent = harbor.DashFloat(logs_dir=tmp_path, source="dashfloat")
    context: Any = sys.modules["harbor.models.agent.context"].AgentContext()
    agent.populate_context_post_run(context)  # no log yet: nothing set, nothing raised
    assert vars(context)["n_input_tokens"] is None
    (tmp_path / LOG_NAME).write_bytes(FIXTURE.read_bytes())
    agent.populate_context_post_run(context)
    assert (context.n_input_tokens, context.n_cache_tokens, context.n_output_tokens) == (1300, 0, 12)
    assert context.metadata["dashfloat"]["session_id"] == "harbor-task-1"
    assert context.metadata["dashfloat"]["changed_paths"] == ["greet.py"]


def test_without_a_source_the_agent_says_what_to_give(
    harbor: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DASHFLOAT_HARBOR_SOURCE", raising=False)
    with pytest.raises(AdapterError, match="source=REQUIREMENT or wheel=PATH"):
        harbor.DashFloat(logs_dir=tmp_path)


def test_the_class_is_complete_against_the_real_harbor(tmp_path: Path) -> None:
    pytest.importorskip("harbor.agents.installed.base", reason="Harbor needs Python >= 3.12; not installed here")
    module: Any = importlib.import_module("integrations.harbor.agent")
    assert not getattr(module.DashFloat, "__abstractmethods__", set())
    agent = module.DashFloat(logs_dir=tmp_path, source="dashfloat")
    assert agent.name() == "dashfloat"
