"""Start-up: the main process forks the agent without loading the agent's code, the LLM's HTTP stack or the UI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "dashfloat.agent._core",
    "dashfloat.agent._process",
    "requests",
    "prompt_toolkit",
    "dashfloat.llm",
    "dashfloat.executor._serve",
    "pathspec",
    "dashfloat.sessions.log",  # only --resume needs it before the fork
)


def test_what_the_main_process_imports_before_it_forks_the_agent() -> None:
    probe = (
        "import json, sys\n"
        "from dashfloat.launch import prepare\n"
        "from dashfloat.runtime import AgentProcess\n"
        "from dashfloat.agent import AgentOptions\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(result.stdout) == []


def test_the_lazy_exports_still_give_every_name() -> None:
    from dashfloat import agent, executor, runtime

    assert agent.AgentCore.__name__ == "AgentCore"
    assert runtime.Printer.__name__ == "Printer"
    assert executor.detect_sandbox.__name__ == "detect"  # exported under another name
    for name in executor.__all__:
        getattr(executor, name)


def test_a_name_the_package_does_not_export_is_an_attribute_error() -> None:
    from dashfloat import executor

    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        _ = executor.nonesuch


def test_the_console_script_forks_the_agent_before_it_loads_the_command_line() -> None:
    """What ``dashfloat._entry`` imports to fork the agent: the shared modules, not the CLI nor the launch."""
    probe = (
        "import json, sys\n"
        "import dashfloat._entry\n"
        "import dashfloat.runtime._run, dashfloat.sessions.state  # what _entry imports to fork\n"
        "late = ('argparse', 'dashfloat.cli', 'dashfloat.launch', 'dashfloat.runtime.printer', 'dashfloat.ui',\n"
        "        'tomllib', 'difflib')  # a config file is read, a misspelt field named, after the fork (ADR 0049)\n"
        f"print(json.dumps([m for m in late + {HEAVY!r} if m in sys.modules]))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(result.stdout) == []
