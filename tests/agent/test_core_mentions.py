"""@ mentions in the agent's state machine: completion requests pass through; attachments (below)."""

from __future__ import annotations

from dashfloat.protocol import FindPaths, PathsFound
from tests.agent.test_core import make_core, take


def test_a_completion_request_goes_to_the_executor_and_its_answer_to_the_ui() -> None:
    core = make_core()
    core.on_ui(FindPaths(ref=3, query="READ", refresh=True))
    assert take(core, "executor") == [FindPaths(ref=3, query="READ", refresh=True)]
    core.on_executor(PathsFound(ref=3, query="READ", paths=["README.md"]))
    assert take(core, "ui") == [PathsFound(ref=3, query="READ", paths=["README.md"])]
    assert core.phase == "idle"  # completion is no turn


def test_an_executor_death_answers_the_open_completion_request() -> None:
    core = make_core()
    core.on_ui(FindPaths(ref=4, query="src"))
    take(core)
    core.on_executor_died("killed by SIGKILL")
    [answer] = take(core, "ui")
    assert isinstance(answer, PathsFound) and answer.ref == 4 and answer.paths == []
    assert "executor process died" in answer.notice
    core.on_executor_died("again")
    assert take(core, "ui") == []  # answered once
