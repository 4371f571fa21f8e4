"""Argument validation against the catalogue: names, presence, types, ranges, defaults."""

from __future__ import annotations

from typing import Any

import pytest

from dashfloat.catalogue import EXEC_TIMEOUT_MAX_S, READ_DEFAULT_LIMIT, READ_MAX_LIMIT
from dashfloat.executor import validate
from tests.executor.conftest import run_json


def test_defaults_are_filled_in() -> None:
    assert validate("read_file", {"path": "a"}) == {"path": "a", "offset": 1, "limit": READ_DEFAULT_LIMIT}
    assert validate("list_directory", {}) == {"path": "."}
    assert validate("execute_command", {"command": "true"}) == {"command": "true", "cwd": ".", "timeout": None}


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("rm_rf", {}, "unknown tool"),
        (None, {}, "unknown tool"),
        ("read_file", [], "must be a JSON object"),
        ("read_file", {}, "missing required parameter path"),
        ("read_file", {"path": 3}, "path must be a string"),
        ("read_file", {"path": "a", "offset": 0}, "offset must be >= 1"),
        ("read_file", {"path": "a", "offset": True}, "offset must be an integer"),
        ("read_file", {"path": "a", "offset": 1.0}, "offset must be an integer"),
        ("read_file", {"path": "a", "limit": 0}, "limit must be >= 1"),
        ("read_file", {"path": "a", "limit": READ_MAX_LIMIT + 1}, f"limit must be <= {READ_MAX_LIMIT}"),
        ("read_file", {"path": "a", "bogus": 1}, "unknown parameter(s): bogus"),
        ("write_file", {"path": "a"}, "missing required parameter content"),
        ("edit_file", {"path": "a", "search_block": "", "replace_block": "x"}, "search_block is empty"),
        ("edit_file", {"path": "a", "search_block": "x", "replace_block": "x"}, "identical"),
        ("execute_command", {"command": ["ls"]}, "command must be a string"),
        ("list_directory", {"path": None}, "path must be a string"),
    ],
)
def test_bad_calls_are_refused(name: Any, args: Any, message: str) -> None:
    error = validate(name, args)
    assert isinstance(error, str)
    assert message in error


def test_limit_range_edges_accepted() -> None:
    assert isinstance(validate("read_file", {"path": "a", "limit": 1}), dict)
    assert isinstance(validate("read_file", {"path": "a", "limit": READ_MAX_LIMIT}), dict)


def test_bad_arguments_execute_nothing(tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    result = run_json("execute_command", {"command": f"touch {marker}", "extra": 1}, str(tmp_path))
    assert result["ok"] is False
    assert "unknown parameter" in result["error"]
    assert not marker.exists()


def test_the_timeout_is_a_number_between_1_and_the_maximum() -> None:
    ok = validate("execute_command", {"command": "true", "timeout": 120.5})
    assert isinstance(ok, dict) and ok["timeout"] == 120.5
    assert isinstance(validate("execute_command", {"command": "t", "timeout": EXEC_TIMEOUT_MAX_S}), dict)
    assert validate("execute_command", {"command": "t", "timeout": EXEC_TIMEOUT_MAX_S + 0.5}) == (
        "execute_command: timeout must be <= 600, got 600.5"
    )
    assert validate("execute_command", {"command": "t", "timeout": 0}) == "execute_command: timeout must be >= 1, got 0"
    assert validate("execute_command", {"command": "t", "timeout": True}) == "execute_command: timeout must be a number"
    assert validate("execute_command", {"command": "t", "timeout": "60"}) == "execute_command: timeout must be a number"
