"""The idle PSS rows of bench/speed.py read several starts and judge their median (ADR 0056)."""

from __future__ import annotations

from bench.speed import IDLE_PSS_STARTS, _median_reading


def test_the_row_keeps_every_start_and_names_the_processes_of_the_median_one() -> None:
    readings = [(36.9, "high"), (34.2, "low"), (35.1, "middle")]
    totals, each = _median_reading(readings)
    assert totals == [36.9, 34.2, 35.1]
    assert each == "middle"


def test_an_even_count_names_the_lower_middle_start() -> None:
    assert _median_reading([(2.0, "b"), (1.0, "a"), (4.0, "d"), (3.0, "c")])[1] == "b"


def test_a_full_run_reads_an_odd_number_of_starts() -> None:
    """An odd count: the median is one start's reading, whose processes the note names."""
    assert IDLE_PSS_STARTS % 2 == 1 and IDLE_PSS_STARTS >= 3
