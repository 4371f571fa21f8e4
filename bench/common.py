"""What every benchmark module returns: figures with samples, a same-run baseline and a target."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class Figure:
    """One measured quantity: raw samples, an optional same-run baseline, a target in words."""

    name: str
    unit: str
    samples: list[float]
    baseline_name: str | None = None
    baseline_samples: list[float] = field(default_factory=list)
    target: str = ""
    met: bool | None = None  # None: no target to hold it to
    note: str = ""

    def median(self) -> float:
        return statistics.median(self.samples)

    def quantile(self, q: float) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]

    def ratio(self) -> float | None:
        if not self.baseline_samples:
            return None
        base = statistics.median(self.baseline_samples)
        return self.median() / base if base else None


def distinct_token(i: int) -> str:
    """Token ``i`` of a text that never repeats (the repetition guard stops a stream of one repeated word, so a
    throughput figure over "tok tok …" would time a cut stream); all the same width (``TOKEN_CHARS``), so a text
    of them splits into one token per event."""
    return f"w{i:05d} "


TOKEN_CHARS = len(distinct_token(0))
