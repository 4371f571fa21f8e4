"""list_directory: sorted, typed entries, the 501-entry cap, non-UTF-8 names shown escaped."""

from __future__ import annotations

import os
from pathlib import Path

from dashfloat.executor import LIST_MAX_ENTRIES
from tests.executor.conftest import run_json


def test_types_sizes_and_order(root: Path) -> None:
    (root / "b.txt").write_text("12345")
    (root / "a_dir").mkdir()
    (root / "c_link").symlink_to("b.txt")
    os.mkfifo(root / "d_fifo")
    r = run_json("list_directory", {}, str(root))
    assert r["ok"] is True and r["truncated"] is False and r["total"] == 4
    assert [(e["name"], e["type"]) for e in r["entries"]] == [
        ("a_dir", "dir"),
        ("b.txt", "file"),
        ("c_link", "symlink"),
        ("d_fifo", "other"),
    ]
    assert r["entries"][1]["size"] == 5


def test_non_utf8_names_are_escaped_not_skipped(root: Path) -> None:
    os.close(os.open(os.fsencode(root) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    (root / "ok.txt").write_text("")
    r = run_json("list_directory", {"path": "."}, str(root))
    assert r["entries"][0] == {"name": "caf\\xe9.txt", "type": "file", "size": 0, "escaped": True}
    assert r["entries"][1]["name"] == "ok.txt" and "escaped" not in r["entries"][1]


def test_entry_cap_is_crossed(root: Path) -> None:
    for n, name in ((LIST_MAX_ENTRIES, "at"), (LIST_MAX_ENTRIES + 1, "over"), (2000, "big")):
        (root / name).mkdir()
        for i in range(n):
            os.close(os.open(root / name / f"f{i:04d}", os.O_CREAT | os.O_WRONLY, 0o644))
    at = run_json("list_directory", {"path": "at"}, str(root))
    assert (len(at["entries"]), at["truncated"]) == (LIST_MAX_ENTRIES, False)
    over = run_json("list_directory", {"path": "over"}, str(root))
    assert (len(over["entries"]), over["truncated"]) == (LIST_MAX_ENTRIES, True)
    big = run_json("list_directory", {"path": "big"}, str(root))
    assert (len(big["entries"]), big["truncated"], big["total"]) == (LIST_MAX_ENTRIES, True, 2000)
    assert big["entries"][-1]["name"] == f"f{LIST_MAX_ENTRIES - 1:04d}"  # the alphabetical head


def test_refusals(root: Path) -> None:
    (root / "f.txt").write_text("")
    assert run_json("list_directory", {"path": "f.txt"}, str(root)) == {
        "ok": False,
        "error": "not a directory: f.txt",
    }
    (root / "out").symlink_to(root.parent / "outside")
    r = run_json("list_directory", {"path": "out"}, str(root))
    assert str(r["error"]).startswith("path escapes the working directory")
    assert run_json("list_directory", {"path": "gone"}, str(root)) == {
        "ok": False,
        "error": "file not found: gone",
    }
