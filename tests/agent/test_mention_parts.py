"""What a mention adds to the prompt (pure): the fence, the byte budget, the failure line."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dashfloat.agent._mentions import (
    MENTIONS_ATTACHED_MAX_BYTES,
    MENTIONS_MAX_PER_PROMPT,
    attachment,
    mentioned,
    read_call,
    typed_prompt,
    with_attachments,
)
from dashfloat.mentions import ATTACHMENTS_LINE
from dashfloat.protocol import ListDirectoryArgs, ReadFileArgs, ReadFileResult, ToolCancelled, ToolFailed


def read(content: str) -> ReadFileResult:
    return ReadFileResult("f", content, 1, 1, 1, len(content.encode()), False)


def test_content_with_backticks_gets_a_longer_fence() -> None:
    part = attachment("f.md", read("a ```` b\n"), 1000)
    assert part.text.endswith("`````\na ```` b\n`````")


def test_failures_and_cancels_leave_a_line_not_a_block() -> None:
    assert attachment("x", ToolFailed(error="no such file: x"), 10).text == "@x could not be attached: no such file: x"
    assert "cancelled" in attachment("x", ToolCancelled(), 10).text
    assert attachment("x", ToolFailed(error="e"), 10).used == 0


def test_mentions_are_distinct_and_bounded() -> None:
    assert mentioned("@a @b @a").paths == ["a", "b"]
    many = mentioned(" ".join(f"@f{i}" for i in range(MENTIONS_MAX_PER_PROMPT + 3)))
    assert len(many.paths) == MENTIONS_MAX_PER_PROMPT and many.beyond == 3


def test_a_directory_mention_is_listed() -> None:
    assert read_call("src/") == ListDirectoryArgs(path="src/")
    assert read_call("src") == ReadFileArgs(path="src")


def test_the_prompt_comes_first_then_each_part_and_the_typed_prompt_comes_back() -> None:
    content = with_attachments("p", ["a", "b"])
    assert content == f"p\n\n{ATTACHMENTS_LINE}\n\na\n\nb"
    assert typed_prompt(content) == "p"
    assert typed_prompt("no attachments\n\nat all") == "no attachments\n\nat all"
    assert with_attachments("p", []) == "p"


@given(st.text(max_size=40), st.lists(st.text(max_size=20), max_size=3))
def test_the_typed_prompt_survives_any_attachments(prompt: str, parts: list[str]) -> None:
    if ATTACHMENTS_LINE not in prompt:
        assert typed_prompt(with_attachments(prompt, parts)) == prompt


@given(st.text(max_size=300), st.integers(min_value=0, max_value=400))
def test_a_part_never_uses_more_than_its_budget_and_says_when_it_was_cut(content: str, budget: int) -> None:
    part = attachment("f", read(content), budget)
    assert part.used <= budget
    assert part.cut == (len(content.encode()) > budget)
    assert (str(MENTIONS_ATTACHED_MAX_BYTES) in part.text) == part.cut or str(MENTIONS_ATTACHED_MAX_BYTES) in content
    if not part.cut:
        assert content in part.text
