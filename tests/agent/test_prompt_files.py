"""Prompt files on real temp trees: where they come from, which wins, and every bound crossed."""

from __future__ import annotations

from pathlib import Path

from dashfloat.agent.prompt_files import PROMPT_FILE_MAX_BYTES, PROMPT_FILES_MAX, load_prompt_files
from dashfloat.ui._commands import Invalid, Prompt, expand_prompt_file, parse


def test_project_wins_over_user_and_bad_ones_are_named(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    sub = project / "src"
    sub.mkdir()
    (project / ".dashfloat" / "prompts").mkdir(parents=True)
    (project / ".dashfloat" / "prompts" / "fix.md").write_text("project fix")
    (project / ".dashfloat" / "prompts" / "Bad Name.md").write_text("x")
    (project / ".dashfloat" / "prompts" / "big.md").write_text("x" * (PROMPT_FILE_MAX_BYTES + 1))
    (project / ".dashfloat" / "prompts" / "exact.md").write_text("y" * PROMPT_FILE_MAX_BYTES)
    user = tmp_path / "cfg" / "dashfloat" / "prompts"
    user.mkdir(parents=True)
    (user / "fix.md").write_text("user fix")
    (user / "mine.md").write_text("user only")
    found, problems = load_prompt_files(sub, {"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    by_name = {f.name: f.text for f in found}
    assert by_name == {"fix": "project fix", "exact": "y" * PROMPT_FILE_MAX_BYTES, "mine": "user only"}
    assert any("Bad Name.md" in p for p in problems) and any("big.md" in p for p in problems)


def test_at_most_the_bound_are_offered(tmp_path: Path) -> None:
    prompts = tmp_path / ".dashfloat" / "prompts"
    prompts.mkdir(parents=True)
    for n in range(PROMPT_FILES_MAX + 1):
        (prompts / f"p{n:03d}.md").write_text("x")
    found, problems = load_prompt_files(tmp_path, {"XDG_CONFIG_HOME": str(tmp_path / "none")})
    assert len(found) == PROMPT_FILES_MAX and any(f"more than {PROMPT_FILES_MAX}" in p for p in problems)


def test_expansion_and_parsing() -> None:
    assert expand_prompt_file("Review $ARGUMENTS now", "a.py") == "Review a.py now"
    assert expand_prompt_file("Summarise.", "") == "Summarise."
    assert expand_prompt_file("Summarise.\n", "only src/") == "Summarise.\n\nonly src/"
    from dashfloat.protocol import PromptFile

    files = [PromptFile(name="review", text="Review $ARGUMENTS", source="x")]
    assert parse("/review a.py", files) == Prompt("Review a.py")
    assert parse("/help", files) != Prompt("Review ")  # a built-in command keeps its meaning
    unknown = parse("/reveiw a.py", files)
    assert isinstance(unknown, Invalid) and "/review" in unknown.error


def test_a_project_prompt_linking_out_of_the_project_is_refused_and_a_users_own_link_is_kept(tmp_path: Path) -> None:
    secret = tmp_path / "home" / ".aws" / "credentials"
    secret.parent.mkdir(parents=True)
    secret.write_text("aws_secret_access_key = x\n")
    project = tmp_path / "p"
    prompts = project / ".dashfloat" / "prompts"
    prompts.mkdir(parents=True)
    (project / ".git").mkdir()
    (prompts / "review.md").symlink_to(secret)
    (project / "REVIEW.md").write_text("review the diff\n")
    (prompts / "inside.md").symlink_to(project / "REVIEW.md")
    user = tmp_path / "cfg" / "dashfloat" / "prompts"
    user.mkdir(parents=True)
    (tmp_path / "mine.md").write_text("my own prompt, kept elsewhere\n")
    (user / "mine.md").symlink_to(tmp_path / "mine.md")
    found, problems = load_prompt_files(project, {"XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert {f.name: f.text for f in found} == {
        "inside": "review the diff\n",
        "mine": "my own prompt, kept elsewhere\n",
    }
    assert problems == [f"{prompts / 'review.md'}: cannot be used: links out of {project} (to {secret})"]
