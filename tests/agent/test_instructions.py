"""AGENTS.md discovery on real directory trees: root to cwd, bounded, never crashing."""

from __future__ import annotations

import os
from pathlib import Path

from dashfloat.agent.instructions import (
    INSTRUCTIONS_MAX_BYTES,
    TRUNCATION_MARKER,
    load_project_instructions,
    project_root,
)


def make_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def test_files_from_the_repository_root_down_to_cwd_outermost_first(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "AGENTS.md": "above the repo: ignored\n",
            "repo/.git/HEAD": "ref\n",
            "repo/AGENTS.md": "root rules\n",
            "repo/pkg/AGENTS.md": "pkg rules\n",
            "repo/pkg/sub/AGENTS.md": "sub rules\n",
            "repo/other/AGENTS.md": "sibling: ignored\n",
        },
    )
    cwd = tmp_path / "repo" / "pkg" / "sub"
    got = load_project_instructions(cwd)
    assert got.files == [tmp_path / "repo/AGENTS.md", tmp_path / "repo/pkg/AGENTS.md", cwd / "AGENTS.md"]
    assert got.text == (
        "=== ../../AGENTS.md ===\nroot rules\n\n=== ../AGENTS.md ===\npkg rules\n\n=== AGENTS.md ===\nsub rules\n"
    )
    assert not got.truncated and got.problems == []


def test_directories_without_agents_md_are_skipped(tmp_path: Path) -> None:
    make_tree(tmp_path, {".git/HEAD": "", "a/b/AGENTS.md": "deep\n", "a/AGENTS.md": "  \n"})
    got = load_project_instructions(tmp_path / "a" / "b")
    assert got.files == [tmp_path / "a/b/AGENTS.md"]  # the blank one adds nothing
    assert got.text == "=== AGENTS.md ===\ndeep\n"


def test_without_a_repository_only_cwd_is_read(tmp_path: Path) -> None:
    make_tree(tmp_path, {"AGENTS.md": "parent\n", "work/AGENTS.md": "here\n"})
    got = load_project_instructions(tmp_path / "work")
    assert got.files == [tmp_path / "work/AGENTS.md"]
    assert project_root(tmp_path / "work") == tmp_path / "work"


def test_the_nearest_enclosing_repository_wins_for_nested_repos(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "outer/.git/HEAD": "",
            "outer/AGENTS.md": "outer\n",
            "outer/inner/.git": "gitdir: ../.git/modules/inner\n",  # a submodule's .git is a file
            "outer/inner/AGENTS.md": "inner\n",
            "outer/inner/src/AGENTS.md": "src\n",
        },
    )
    cwd = tmp_path / "outer" / "inner" / "src"
    assert project_root(cwd) == tmp_path / "outer" / "inner"
    assert load_project_instructions(cwd).files == [
        tmp_path / "outer/inner/AGENTS.md",
        tmp_path / "outer/inner/src/AGENTS.md",
    ]


def test_non_utf8_and_unreadable_files_are_reported_not_fatal(tmp_path: Path) -> None:
    make_tree(tmp_path, {".git/HEAD": "", "AGENTS.md": b"\xff\xfe bad", "a/AGENTS.md": "fine\n"})
    (tmp_path / "a" / "b").mkdir()
    os.mkfifo(tmp_path / "a" / "b" / "AGENTS.md")  # opening a FIFO for reading would block forever
    got = load_project_instructions(tmp_path / "a" / "b")
    assert got.files == [tmp_path / "a/AGENTS.md"]
    assert got.problems == [
        f"{tmp_path / 'AGENTS.md'}: not UTF-8 text, skipped",
        f"{tmp_path / 'a/b/AGENTS.md'}: not a regular file, skipped",
    ]


def test_an_unopenable_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").symlink_to("AGENTS.md")  # a symlink loop: ELOOP even for root
    got = load_project_instructions(tmp_path)
    assert got.files == [] and got.problems == [f"{tmp_path / 'AGENTS.md'}: cannot read: {os.strerror(40)}"]


def test_a_directory_named_agents_md_is_reported(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").mkdir()
    got = load_project_instructions(tmp_path)
    assert got.text == "" and got.files == [] and len(got.problems) == 1


def test_instructions_exactly_at_the_bound_are_kept_whole_and_one_more_byte_truncates(tmp_path: Path) -> None:
    body = "x" * (INSTRUCTIONS_MAX_BYTES - len(b"=== AGENTS.md ===\n") - 2)  # 2: the section's blank line
    make_tree(tmp_path, {"AGENTS.md": body})
    got = load_project_instructions(tmp_path)
    assert not got.truncated and got.text == f"=== AGENTS.md ===\n{body}\n"
    make_tree(tmp_path, {"AGENTS.md": body + "y"})
    got = load_project_instructions(tmp_path)
    assert got.truncated and got.text.endswith(f"xx\n{TRUNCATION_MARKER}")
    assert len(got.text.encode()) <= INSTRUCTIONS_MAX_BYTES


def test_crossing_the_bound_truncates_at_a_line_with_a_marker(tmp_path: Path) -> None:
    line = "é rule\n"  # multi-byte, so a byte cut could land inside a character
    make_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "AGENTS.md": "outer\n",
            "a/AGENTS.md": line * (INSTRUCTIONS_MAX_BYTES // len(line.encode()) + 10),
            "a/b/AGENTS.md": "never read\n",
        },
    )
    got = load_project_instructions(tmp_path / "a" / "b")
    assert got.truncated
    assert got.text.endswith(TRUNCATION_MARKER)
    assert len(got.text.encode()) <= INSTRUCTIONS_MAX_BYTES
    body = got.text.removesuffix(TRUNCATION_MARKER)
    assert body.endswith("é rule\n") and "never read" not in got.text
    assert got.files == [tmp_path / "AGENTS.md", tmp_path / "a/AGENTS.md"]


def test_a_huge_file_is_read_only_up_to_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    with open(path, "wb") as f:
        f.write(b"rule\n" * 10)
        f.truncate(1 << 30)  # a sparse gigabyte: reading it whole would be the bug
    got = load_project_instructions(tmp_path)
    assert got.truncated and len(got.text.encode()) <= INSTRUCTIONS_MAX_BYTES


def test_a_link_out_of_the_repository_is_not_read(tmp_path: Path) -> None:
    """A hostile clone's ``AGENTS.md -> ~/.ssh/id_rsa`` must not reach the provider with every request."""
    make_tree(
        tmp_path,
        {
            "home/.ssh/id_rsa": "PRIVATE KEY\n",
            "repo/.git/HEAD": "ref\n",
            "repo/docs/rules.md": "linked inside the repository: read\n",
            "repo/pkg/placeholder": "",
        },
    )
    (tmp_path / "repo" / "AGENTS.md").symlink_to("docs/rules.md")
    (tmp_path / "repo" / "pkg" / "AGENTS.md").symlink_to(tmp_path / "home" / ".ssh" / "id_rsa")
    got = load_project_instructions(tmp_path / "repo" / "pkg")
    assert "linked inside the repository: read" in got.text
    assert "PRIVATE KEY" not in got.text
    assert got.files == [tmp_path / "repo" / "AGENTS.md"]
    [problem] = got.problems
    assert problem.startswith(f"{tmp_path / 'repo' / 'pkg' / 'AGENTS.md'}: links out of {tmp_path / 'repo'}")
    assert problem.endswith(f"(to {tmp_path / 'home' / '.ssh' / 'id_rsa'}), skipped")
