"""`make bench`: run every benchmark module, write bench/results.md and bench/results.json."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import platform
import sys
import time
import traceback
from pathlib import Path

from bench.common import Figure

MODULES = (
    "runtime",
    "stream",
    "executor",
    "checkpoints",
    "sessions",
    "compaction",
    "ui",
    "startup",
    "speed",
    "mentions",
    "registry_proxy",  # issue 35: a request through the registry proxy against the same direct
)
OUT_DIR = Path(__file__).parent


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def render(figures: list[Figure], quick: bool, failures: list[str]) -> str:
    lines = [
        "# DashFloat benchmarks",
        "",
        f"`make bench{'-quick' if quick else ''}` on {platform.machine()} / Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Medians with p10–p90 of the samples; "
        "each ratio is to a baseline measured in the same run on the same machine.",
        "",
        "| figure | median | p10 – p90 | unit | n | baseline | ratio | target | met |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in figures:
        f = dataclasses.replace(
            f,
            name=f.name.replace("|", "\\|"),
            unit=f.unit.replace("|", "\\|"),
            baseline_name=f.baseline_name.replace("|", "\\|") if f.baseline_name else f.baseline_name,
            target=f.target.replace("|", "\\|"),
            note=f.note.replace("|", "\\|"),
        )
        ratio = f.ratio()
        met = {True: "yes", False: "**no**", None: "—"}[f.met]
        lines.append(
            f"| {f.name} | {_fmt(f.median())} | {_fmt(f.quantile(0.1))} – {_fmt(f.quantile(0.9))} | {f.unit} "
            f"| {len(f.samples)} | {f.baseline_name or '—'} | {_fmt(ratio) + '×' if ratio else '—'} "
            f"| {f.target or '—'} | {met} |"
        )
    notes = [f"- **{f.name}**: {f.note}" for f in figures if f.note]
    if notes:
        lines += ["", "Notes:", "", *notes]
    if failures:
        lines += ["", "Benchmarks that did not run:", "", *[f"- {item}" for item in failures]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer samples, smaller sizes (under 60 s)")
    parser.add_argument("--only", nargs="*", default=list(MODULES), help="benchmark modules to run")
    args = parser.parse_args()
    figures: list[Figure] = []
    failures: list[str] = []
    for name in args.only:
        started = time.monotonic()
        try:
            module = importlib.import_module(f"bench.{name}")
            got = module.run(args.quick)
        except Exception as exc:
            traceback.print_exc()
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        figures += got
        print(f"bench.{name}: {len(got)} figures in {time.monotonic() - started:.1f}s", file=sys.stderr)
    (OUT_DIR / "results.md").write_text(render(figures, args.quick, failures))
    payload = [
        {**vars(f), "median": f.median(), "p10": f.quantile(0.1), "p90": f.quantile(0.9), "ratio": f.ratio()}
        for f in figures
    ]
    (OUT_DIR / "results.json").write_text(json.dumps({"quick": args.quick, "figures": payload}, indent=1) + "\n")
    print((OUT_DIR / "results.md").read_text())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
