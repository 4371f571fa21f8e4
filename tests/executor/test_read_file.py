"""read_file: line windows, both caps, streaming above the threshold, binary files, FIFOs, sparse 1 GB."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dashfloat.executor import (
    READ_MAX_BYTES,
    READ_MAX_LINES,
    READ_STREAM_THRESHOLD_BYTES,
)
from dashfloat.executor._errors import ERROR_PATH_MAX_CHARS
from tests.executor.conftest import PEAK_RSS_SNIPPET, run_json, run_python


def read(root: Path, path: str, **kw: int) -> dict[str, object]:
    return run_json("read_file", {"path": path, **kw}, str(root))


def test_window_of_a_small_file(root: Path) -> None:
    (root / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    r = read(root, "a.txt", offset=3, limit=2)
    assert str(r["content"]).startswith("line 3\nline 4\n[truncated: showing lines 3-4 of 10 lines, 71 bytes")
    assert (r["lines"], r["total_lines"], r["truncated"]) == (2, 10, True)
    whole = read(root, "a.txt")
    assert (whole["lines"], whole["truncated"], whole["ok"]) == (10, False, True)
    assert "[truncated" not in str(whole["content"])


def test_last_line_without_newline_and_empty_file(root: Path) -> None:
    (root / "n.txt").write_text("a\nb")
    assert read(root, "n.txt")["content"] == "a\nb"
    assert read(root, "n.txt")["total_lines"] == 2
    (root / "e.txt").write_text("")
    assert read(root, "e.txt")["content"] == ""
    assert read(root, "e.txt")["lines"] == 0


def test_offset_past_the_end_is_an_error(root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\n")
    r = read(root, "a.txt", offset=5)
    assert r == {"ok": False, "error": "offset 5 is past the end of the file (2 lines): a.txt"}


def test_line_cap_is_crossed(root: Path) -> None:
    (root / "at.txt").write_text("x\n" * READ_MAX_LINES)
    assert read(root, "at.txt", limit=10_000)["truncated"] is False
    (root / "over.txt").write_text("x\n" * (READ_MAX_LINES + 1))
    r = read(root, "over.txt", limit=10_000)
    assert (r["lines"], r["truncated"]) == (READ_MAX_LINES, True)
    assert f"continue with offset={READ_MAX_LINES + 1}" in str(r["content"])


def test_byte_cap_is_crossed(root: Path) -> None:
    line = "y" * 1023 + "\n"
    (root / "at.txt").write_text(line * (READ_MAX_BYTES // 1024))
    r = read(root, "at.txt")
    assert (r["lines"], r["truncated"]) == (READ_MAX_BYTES // 1024, False)
    (root / "over.txt").write_text(line * (READ_MAX_BYTES // 1024) + "z\n")
    r = read(root, "over.txt")
    assert (r["lines"], r["truncated"]) == (READ_MAX_BYTES // 1024, True)


def test_one_long_line_is_cut_at_the_byte_cap(root: Path) -> None:
    (root / "long.txt").write_text("é" * READ_MAX_BYTES + "\n")  # two bytes each: the cut lands mid-char
    r = read(root, "long.txt")
    content = str(r["content"])
    body = content.split("\n[truncated")[0]
    assert r["truncated"] is True and r["lines"] == 1
    assert body == "é" * (READ_MAX_BYTES // 2)
    assert "line 1 was cut" in content


def test_stream_threshold_is_crossed(root: Path) -> None:
    line = b"q" * 1023 + b"\n"
    (root / "at.txt").write_bytes(line * (READ_STREAM_THRESHOLD_BYTES // 1024))
    assert read(root, "at.txt", limit=3)["total_lines"] == READ_STREAM_THRESHOLD_BYTES // 1024
    (root / "over.txt").write_bytes(line * (READ_STREAM_THRESHOLD_BYTES // 1024) + b"tail\n")
    r = read(root, "over.txt", offset=READ_STREAM_THRESHOLD_BYTES // 1024 + 1)
    assert (r["content"], r["total_lines"], r["truncated"]) == ("tail\n", None, False)
    r = read(root, "over.txt", offset=2, limit=1)
    assert r["truncated"] is True and "lines are not counted" in str(r["content"])


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", b"caf\xe9 au lait\n"])
def test_binary_files_are_refused(root: Path, data: bytes) -> None:
    (root / "b.bin").write_bytes(data)
    r = read(root, "b.bin")
    assert r["ok"] is False and str(r["error"]).startswith("binary file")


def test_fifo_does_not_hang(root: Path) -> None:
    os.mkfifo(root / "pipe")
    assert read(root, "pipe") == {"ok": False, "error": "not a regular file: pipe"}


def test_directory_missing_and_escape(root: Path) -> None:
    (root / "d").mkdir()
    assert read(root, "d") == {"ok": False, "error": "is a directory: d"}
    assert read(root, "nope.txt") == {"ok": False, "error": "file not found: nope.txt"}
    (root / "link").symlink_to(root.parent / "outside" / "secret.txt")
    r = read(root, "link")
    assert str(r["error"]).startswith("path escapes the working directory")


def test_window_at_the_end_of_a_sparse_gigabyte_file_keeps_memory_flat(root: Path) -> None:
    big = root / "sparse.bin"
    with open(big, "wb") as f:
        f.write(b"".join(b"line %d\n" % i for i in range(1, 1001)))
        f.seek(1 << 30)
        f.write(b"\ntail 1\ntail 2\n")  # line 1001 is the 1 GB hole, then two text lines
    assert big.stat().st_blocks * 512 < 10 << 20  # really sparse
    out = run_python(
        PEAK_RSS_SNIPPET + "import msgspec\n"
        "from dashfloat.executor import run_tool\n"
        f"r = run_tool('read_file', {{'path': 'sparse.bin', 'offset': 1002}}, {str(root)!r})\n"
        "from dashfloat.protocol import result_json\n"
        "print(result_json(r))\n"
        "print(PEAK_RSS_KIB())\n"
    )
    result_line, rss_kib = out.splitlines()
    assert '"content":"tail 1\\ntail 2\\n"' in result_line
    assert '"total_lines":null' in result_line and '"truncated":false' in result_line
    assert int(rss_kib) < 150 * 1024  # a whole-file read would need over 1 GB


def test_file_system_errors_name_the_path_in_words(root: Path) -> None:
    (root / "a.txt").write_text("hi\n")
    assert read(root, "a.txt/inner") == {"ok": False, "error": "not a directory (or a parent is a file): a.txt/inner"}
    long_name = "n" * 300  # over NAME_MAX (255): said in words, the path cut at ERROR_PATH_MAX_CHARS
    shown = long_name[: ERROR_PATH_MAX_CHARS - 1] + "…"
    too_long = "path too long (a name over 255 bytes, or the whole path over 4096)"
    assert read(root, long_name) == {"ok": False, "error": f"{too_long}: {shown}"}
    written = run_json("write_file", {"path": f"a.txt/{long_name}", "content": "x"}, str(root))
    assert written["ok"] is False and str(written["error"]).endswith(
        f": a.txt/{long_name[: ERROR_PATH_MAX_CHARS - 7]}…"
    )
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"]  # nothing was created


def test_a_path_too_long_is_named_cut_and_in_words(root: Path) -> None:
    """Found sending a 6000-character path: `File name too long: <the whole path>` went back to the model."""
    path = "a/" * 3000 + "x"
    error = str(read(root, path)["error"])
    shown = path[: ERROR_PATH_MAX_CHARS - 1] + "…"
    assert error == f"path too long (a name over 255 bytes, or the whole path over 4096): {shown}"
    at_bound = "b" * ERROR_PATH_MAX_CHARS  # one name over 255 bytes, named whole at the bound
    assert str(read(root, at_bound)["error"]).endswith(f": {at_bound}")
    over = "b" * (ERROR_PATH_MAX_CHARS + 1)
    assert str(read(root, over)["error"]).endswith(f": {over[: ERROR_PATH_MAX_CHARS - 1]}…")
