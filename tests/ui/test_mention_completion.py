"""@ completion in the input (pure parts): what is asked, which answer is kept, what the menu offers."""

from __future__ import annotations

import asyncio

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from dashfloat.mentions import Partial
from dashfloat.protocol import FindPaths, PathsFound
from dashfloat.ui._mentions import MENTION_MIN_QUERY_CHARS, MentionCompleter, PathCompletion, partial_in
from tests.ui.ui_screen import running_ui


def typed(text: str) -> Partial | None:
    return partial_in(Document(text, len(text)))


def test_each_new_query_is_asked_once_and_a_new_mention_asks_for_a_fresh_index() -> None:
    paths = PathCompletion()
    assert paths.ask(typed("explain @")) is None  # below the minimum: nothing asked
    assert MENTION_MIN_QUERY_CHARS == 1
    assert paths.ask(typed("explain @R")) == FindPaths(ref=1, query="R", refresh=True)
    assert paths.ask(typed("explain @RE")) == FindPaths(ref=2, query="RE", refresh=False)
    assert paths.ask(typed("explain @RE")) is None  # the cursor moved, the query did not change
    assert paths.ask(typed("explain @RE ")) is None  # the mention is over
    assert paths.ask(typed("explain @RE and @s")) == FindPaths(ref=3, query="s", refresh=True)


def test_an_answer_to_an_older_request_is_dropped() -> None:
    paths = PathCompletion()
    paths.ask(typed("@R"))
    paths.ask(typed("@RE"))
    assert not paths.answer(PathsFound(ref=1, query="R", paths=["README.md", "src/reader.py"]))
    assert paths.candidates(typed("@RE")) == ([], "")
    assert paths.answer(PathsFound(ref=2, query="RE", paths=["README.md"]))
    assert paths.candidates(typed("@RE")) == (["README.md"], "")
    assert paths.candidates(typed("@REA")) == ([], "")  # typed on: that answer is not for this query


def test_an_answer_after_the_mention_ended_is_dropped() -> None:
    paths = PathCompletion()
    paths.ask(typed("@R"))
    paths.ask(typed("@R "))
    assert not paths.answer(PathsFound(ref=1, query="R", paths=["README.md"]))


def completions(paths: PathCompletion, text: str) -> list[tuple[str, int, str]]:
    completer = MentionCompleter(paths)
    found = completer.get_completions(Document(text, len(text)), CompleteEvent())
    return [(c.text, c.start_position, c.display_meta_text) for c in found]


def test_files_are_written_whole_and_directories_left_open() -> None:
    paths = PathCompletion()
    paths.ask(typed("line one\nsee @no"))
    paths.answer(PathsFound(ref=1, query="no", paths=["notes/", "my notes.md", "no.txt", "my dir/"]))
    assert completions(paths, "line one\nsee @no") == [
        ("@notes/", -3, "directory"),
        ('@"my notes.md" ', -3, ""),
        ("@no.txt ", -3, ""),
        ('@"my dir/', -3, "directory"),
    ]


def test_the_typed_path_itself_is_no_choice_and_a_notice_shows_on_the_first() -> None:
    paths = PathCompletion()
    paths.ask(typed("@src/"))
    paths.answer(PathsFound(ref=1, query="src/", paths=["src/", "src/a.py"], notice="the file index stopped at 5"))
    assert completions(paths, "@src/") == [("@src/a.py ", -5, "the file index stopped at 5")]


def test_a_quoted_partial_is_replaced_whole() -> None:
    paths = PathCompletion()
    paths.ask(typed('@"my n'))
    paths.answer(PathsFound(ref=1, query="my n", paths=["my notes.md"]))
    assert completions(paths, 'x @"my n') == [('@"my notes.md" ', -6, "")]


def test_through_the_ui_only_the_newest_answer_reaches_the_menu_and_help_names_mentions() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.keys("explain @R")
            await ui.until(lambda: FindPaths(ref=1, query="R", refresh=True) in ui.link.sent)
            ui.keys("E")
            await ui.until(lambda: FindPaths(ref=2, query="RE") in ui.link.sent)
            # the answer to the older prefix arrives late: dropped, no menu from it
            ui.link.push(PathsFound(ref=1, query="R", paths=["src/reader.py"]))
            ui.link.push(PathsFound(ref=2, query="RE", paths=["README.md"]))
            await ui.until(lambda: any(line.strip() == "README.md" for line in ui.lines()))
            assert not any("src/reader.py" in line for line in ui.lines())
            ui.keys("\t")
            await ui.until(lambda: ui.shell.buffer.text == "explain @README.md ")
            ui.keys("\x15/help\r")
            await ui.until(lambda: any("@PATH" in line and "attach a file" in line for line in ui.lines()))

    asyncio.run(main())
