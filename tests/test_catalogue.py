"""The tool descriptions the model reads are built from the bounds the executor enforces."""

from __future__ import annotations

from dashfloat import catalogue
from dashfloat.executor import EXEC_OUTPUT_MAX_BYTES, LIST_MAX_ENTRIES, READ_MAX_BYTES, READ_MAX_LINES
from dashfloat.executor._limits import EXEC_OUTPUT_HEAD_BYTES, EXEC_OUTPUT_TAIL_BYTES


def descriptions(exec_timeout_s: float) -> dict[str, str]:
    functions = [t["function"] for t in catalogue.tools_catalogue(exec_timeout_s)]
    return {str(f["name"]): str(f["description"]) for f in functions if isinstance(f, dict)}


def test_the_text_states_the_bounds_in_force() -> None:
    text = descriptions(catalogue.EXEC_TIMEOUT_DEFAULT_S)
    assert f"at most {READ_MAX_LINES} lines / {READ_MAX_BYTES // 1024} KiB per call" in text["read_file"]
    assert f"at most {LIST_MAX_ENTRIES} entries" in text["list_directory"]
    head, tail = EXEC_OUTPUT_HEAD_BYTES // 1024, EXEC_OUTPUT_TAIL_BYTES // 1024
    assert f"the first {head} KiB and the last {tail} KiB" in text["execute_command"]
    assert EXEC_OUTPUT_HEAD_BYTES + EXEC_OUTPUT_TAIL_BYTES == EXEC_OUTPUT_MAX_BYTES


def test_the_timeout_named_is_the_one_in_force() -> None:
    assert f"killed after {catalogue.EXEC_TIMEOUT_DEFAULT_S:g} s" in descriptions(30)["execute_command"]
    assert "killed after 120 s" in descriptions(120)["execute_command"]
    assert "30 s" not in descriptions(120)["execute_command"]


def test_the_executor_enforces_the_catalogues_own_constants() -> None:
    assert (READ_MAX_LINES, READ_MAX_BYTES, LIST_MAX_ENTRIES) == (
        catalogue.READ_MAX_LINES,
        catalogue.READ_MAX_BYTES,
        catalogue.LIST_MAX_ENTRIES,
    )
