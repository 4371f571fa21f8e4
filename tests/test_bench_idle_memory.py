"""bench/idle_memory.py shows each start's private memory per process, not only the medians (ADR 0091)."""

from __future__ import annotations

from bench.idle_memory import Reading, summary


def test_each_process_lists_every_starts_private_memory_in_start_order() -> None:
    """A bimodal figure (the agent's and the executor's ~0.3 MB flip) shows in the list; the median hides it."""
    readings: list[Reading] = [
        {"main": (9.0, 7.0, 15.0), "dashfloat-agent": (8.0, 4.3, 9.5)},
        {"main": (9.1, 7.1, 15.1), "dashfloat-agent": (7.8, 4.0, 9.4)},
        {"main": (9.2, 7.2, 15.2), "dashfloat-agent": (7.9, 4.1, 9.4)},
    ]
    lines = summary("headless x", readings).splitlines()
    assert lines[0].startswith("headless x: PSS 17.00 MB (each start: 17.00, 16.90, 17.10), own 24.50 MB")
    assert lines[2].split() == [
        "dashfloat-agent", "PSS", "7.90", "USS", "4.10", "own", "9.40",
        "(USS", "of", "each", "start:", "4.30", "4.00", "4.10)",
    ]  # fmt: skip
