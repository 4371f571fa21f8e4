"""Skills (ADR 0088): SKILL.md front matter, discovery in the project and the user's config dir, the capped index."""

from __future__ import annotations

import os
from pathlib import Path

from dashfloat.agent._prompt import system_message
from dashfloat.protocol import ReadFileArgs
from dashfloat.skills import (
    INDEX_HEADER,
    SKILL_DESCRIPTION_MAX_CHARS,
    SKILL_FILE_MAX_BYTES,
    SKILLS_INDEX_MAX_CHARS,
    SKILLS_PER_DIR_MAX,
    Skill,
    front_matter,
    load_skills,
    skills_index,
    user_skill_read,
)


def skill(root: Path, folder: str, header: str, body: str = "Do it.\n") -> Path:
    (root / folder).mkdir(parents=True, exist_ok=True)
    path = root / folder / "SKILL.md"
    path.write_text(f"---\n{header}\n---\n{body}")
    return path


def test_front_matter_reads_the_subset_skill_files_use() -> None:
    text = """---
name: pdf-forms
description: >
  Fill PDF forms
  and flatten them.
quoted: "a \\"b\\" c"
single: 'it''s'
plain: value # a comment
literal: |
  one
  two
folded: starts here
  and goes on
metadata:
  - ignored: true
---
body
"""
    assert front_matter(text) == {
        "name": "pdf-forms",
        "description": "Fill PDF forms and flatten them.",
        "quoted": 'a "b" c',
        "single": "it's",
        "plain": "value",
        "literal": "one\ntwo",
        "folded": "starts here and goes on",
    }
    assert front_matter("no header") is None
    assert front_matter("---\nname: x\n") is None  # never closed
    assert front_matter('---\nbad: "\\q"\n---') == {"bad": "\\q"}


def test_skills_are_found_in_the_project_and_the_users_dir(tmp_path: Path) -> None:
    work, config = tmp_path / "work", tmp_path / "cfg"
    skills_dir = work / ".agents" / "skills"
    skill(skills_dir, "pdf", "name: pdf-forms\ndescription: Fill PDF forms.")
    skill(skills_dir, "nodesc", "name: nodesc")
    (skills_dir / "empty").mkdir()
    (skills_dir / "broken").mkdir()
    (skills_dir / "broken" / "SKILL.md").write_text("no header")
    user_dir = config / "dashfloat" / "skills"
    skill(user_dir, "release", "description: Cut a release.\n", "Step 1\nStep 2\nStep 3\n")
    skill(user_dir, "pdf", "name: pdf-forms\ndescription: the user's, shadowed")
    found, problems = load_skills(str(work), {"XDG_CONFIG_HOME": str(config)})
    assert found[0] == Skill("pdf-forms", "Fill PDF forms.", ".agents/skills/pdf/SKILL.md", "project")
    user = found[1]
    assert (user.name, user.source, user.path) == ("release", "user", str(user_dir / "release" / "SKILL.md"))
    assert len(found) == 2
    assert any("nodesc/SKILL.md: not listed: no description" in p for p in problems)
    assert any("broken/SKILL.md: not listed: no front matter" in p for p in problems)


def test_a_project_skill_that_links_out_of_the_project_is_not_read(tmp_path: Path) -> None:
    work = tmp_path / "work"
    outside = skill(tmp_path / "elsewhere", "s", "name: s\ndescription: secret")
    (work / ".agents" / "skills" / "s").mkdir(parents=True)
    os.symlink(outside, work / ".agents" / "skills" / "s" / "SKILL.md")
    found, problems = load_skills(str(work), {"XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert found == [] and "links out of" in problems[0]


def test_folders_past_the_bound_are_not_looked_at(tmp_path: Path) -> None:
    root = tmp_path / "work" / ".agents" / "skills"
    for n in range(SKILLS_PER_DIR_MAX + 1):
        skill(root, f"s{n:03d}", f"name: s{n:03d}\ndescription: number {n}")
    found, problems = load_skills(str(tmp_path / "work"), {"XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert len(found) == SKILLS_PER_DIR_MAX and f"only the first {SKILLS_PER_DIR_MAX} looked at" in problems[0]


def test_a_header_past_the_read_bound_is_no_header(tmp_path: Path) -> None:
    root = tmp_path / "work" / ".agents" / "skills"
    skill(root, "big", "name: big\ndescription: " + "x" * SKILL_FILE_MAX_BYTES)
    found, problems = load_skills(str(tmp_path / "work"), {"XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert found == [] and "no front matter" in problems[0]


def test_a_description_is_one_line_and_cut(tmp_path: Path) -> None:
    root = tmp_path / "work" / ".agents" / "skills"
    skill(root, "long", "name: long\ndescription: |\n  line one\n  " + "y" * SKILL_DESCRIPTION_MAX_CHARS)
    [found], _ = load_skills(str(tmp_path / "work"), {"XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert len(found.description) == SKILL_DESCRIPTION_MAX_CHARS and found.description.endswith("y…")
    assert found.description.startswith("line one yyy")


def test_the_index_is_capped_and_counts_what_it_leaves_out() -> None:
    skills = [Skill(f"skill-{n}", "d" * 200, f".agents/skills/{n}/SKILL.md", "project") for n in range(100)]
    index = skills_index(skills)
    assert index.startswith(INDEX_HEADER) and len(index) <= SKILLS_INDEX_MAX_CHARS + 80
    listed = index.count("\n- ")
    assert 0 < listed < 100 and index.endswith(f"[… {100 - listed} more skills not listed: the index is capped]")
    assert skills_index([]) == ""
    assert skills_index(skills[:2]).count("\n- ") == 2


def test_the_system_prompt_carries_the_index() -> None:
    index = skills_index([Skill("pdf-forms", "Fill PDF forms.", ".agents/skills/pdf/SKILL.md", "project")])
    content = system_message("/w", "", skills=index).content
    assert content is not None and content.endswith(
        INDEX_HEADER + "\n- pdf-forms: Fill PDF forms. (.agents/skills/pdf/SKILL.md)"
    )
    assert INDEX_HEADER not in (system_message("/w").content or "")


def test_a_user_skill_is_read_from_its_copy_by_window() -> None:
    user = Skill("release", "Cut a release.", "/home/me/.config/dashfloat/skills/release/SKILL.md", "user", "a\nb\nc\n")
    read = user_skill_read([user], ReadFileArgs(path=user.path, offset=2, limit=1))
    assert read is not None and (read.content, read.lines, read.total_lines, read.truncated) == ("b\n", 1, 3, True)
    assert user_skill_read([user], ReadFileArgs(path="other.md")) is None
    project = Skill("p", "d", ".agents/skills/p/SKILL.md", "project")
    assert user_skill_read([project], ReadFileArgs(path=project.path)) is None
