"""Input history on real files: bounded, deduplicated, multi-line safe, private."""

from __future__ import annotations

import json
import stat
import tempfile
from pathlib import Path

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.sessions.history import (
    HISTORY_ENTRY_MAX_BYTES,
    HISTORY_MAX_ENTRIES,
    append_history,
    load_history,
)


def test_a_missing_file_is_an_empty_history(tmp_path: Path) -> None:
    assert load_history(tmp_path / "nope" / "history") == []


def test_entries_round_trip_in_order_with_private_permissions(tmp_path: Path) -> None:
    path = tmp_path / "state" / "dashfloat" / "history"
    for text in ["first", "line one\nline two\n", "tab\tand \u2028 separator"]:
        append_history(path, text)
    assert load_history(path) == ["first", "line one\nline two\n", "tab\tand \u2028 separator"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(path.read_bytes().splitlines()) == 3  # one JSON line each


def test_an_existing_wide_file_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "history"
    path.write_text('"old"\n')
    path.chmod(0o644)
    append_history(path, "new")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_repeated_prompt_moves_to_the_end_and_is_stored_once(tmp_path: Path) -> None:
    path = tmp_path / "history"
    for text in ["a", "b", "c", "a", "a"]:
        append_history(path, text)
    assert load_history(path) == ["b", "c", "a"]
    assert path.read_text().splitlines() == ['"b"', '"c"', '"a"']


def test_blank_prompts_are_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "history"
    append_history(path, "  \n ")
    append_history(path, "")
    assert load_history(path) == []


def test_the_entry_size_bound_is_crossed_by_one_byte(tmp_path: Path) -> None:
    path = tmp_path / "history"
    overhead = len(msgspec.json.encode("")) + 1  # quotes and newline
    fits = "x" * (HISTORY_ENTRY_MAX_BYTES - overhead)
    append_history(path, fits)
    append_history(path, fits + "y")
    assert load_history(path) == [fits]


def test_the_history_is_bounded_and_compacted_on_overflow(tmp_path: Path) -> None:
    path = tmp_path / "history"
    path.write_text("".join(json.dumps(f"p{i}") + "\n" for i in range(HISTORY_MAX_ENTRIES)))
    assert len(load_history(path)) == HISTORY_MAX_ENTRIES
    append_history(path, "newest")
    history = load_history(path)
    assert len(history) == HISTORY_MAX_ENTRIES
    assert history[0] == "p1" and history[-1] == "newest"
    assert len(path.read_text().splitlines()) == HISTORY_MAX_ENTRIES


def test_an_oversized_file_loads_only_the_newest_entries(tmp_path: Path) -> None:
    path = tmp_path / "history"
    path.write_text("".join(json.dumps(f"p{i}") + "\n" for i in range(HISTORY_MAX_ENTRIES + 5)))
    history = load_history(path)
    assert len(history) == HISTORY_MAX_ENTRIES and history[0] == "p5"


def test_damaged_lines_are_skipped_and_a_torn_tail_does_not_swallow_the_next_entry(tmp_path: Path) -> None:
    path = tmp_path / "history"
    path.write_text('"good"\n{not json\n42\n"torn')
    assert load_history(path) == ["good"]
    append_history(path, "next")
    assert load_history(path) == ["good", "next"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "multi\nline", "d"]), max_size=20))
def test_history_equals_the_last_use_order_of_distinct_prompts(prompts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history"
        for p in prompts:
            append_history(path, p)
        expected = list(reversed(dict.fromkeys(reversed(prompts))))
        assert load_history(path) == expected
