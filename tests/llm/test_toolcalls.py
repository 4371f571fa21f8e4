"""The accumulator: the OpenAI shape, every provider deviation in providers.md, and properties."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.llm.toolcalls import WRITTEN_MAX_CHARS, ToolCalls
from dashfloat.tool_args import explained, parse_args
from tests.llm.conftest import written


def first(index: int | None, call_id: str | None, name: str | None, args: Any = "") -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if index is not None:
        item["index"] = index
    if call_id is not None:
        item["id"] = call_id
    return item


def frag(index: int | None, args: Any, **extra: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"function": {"arguments": args}, **extra}
    if index is not None:
        item["index"] = index
    return item


def assemble(*chunks: list[Any]) -> list[tuple[str, str, dict[str, Any] | None, str | None]]:
    acc = ToolCalls()
    for chunk in chunks:
        acc = acc.feed(chunk)
    return [(c.id, c.name, written(c), c.error) for c in acc.finish()]


def test_the_openai_shape_interleaved_by_index() -> None:
    calls = assemble(
        [first(0, "call_a", "read_file")],
        [first(1, "call_b", "list_directory")],
        [frag(0, '{"pa')],
        [frag(1, '{"path": "src"}')],
        [frag(0, 'th": "a.txt"}')],
    )
    assert calls == [
        ("call_a", "read_file", {"path": "a.txt"}, None),
        ("call_b", "list_directory", {"path": "src"}, None),
    ]


def test_whole_call_in_one_fragment() -> None:
    assert assemble([first(0, "c1", "read_file", '{"path": "x"}')]) == [("c1", "read_file", {"path": "x"}, None)]


def test_index_missing_on_every_item() -> None:
    calls = assemble([first(None, "c1", "read_file", '{"path": "a"}'), first(None, "c2", "read_file", '{"path": "b"}')])
    assert [c[0] for c in calls] == ["c1", "c2"]
    assert [c[2] for c in calls] == [{"path": "a"}, {"path": "b"}]


def test_index_missing_with_fragments_continues_the_latest_call() -> None:
    calls = assemble([first(None, "c1", "read_file", '{"path"')], [frag(None, ': "a"}')])
    assert calls == [("c1", "read_file", {"path": "a"}, None)]


def test_no_index_and_no_id_a_named_fragment_after_a_complete_call_starts_the_next() -> None:
    calls = assemble(
        [first(None, None, "read_file", '{"path": "a"}')], [first(None, None, "read_file", '{"path": "b"}')]
    )
    assert [c[1:3] for c in calls] == [("read_file", {"path": "a"}), ("read_file", {"path": "b"})]


def test_every_parallel_call_at_index_zero_told_apart_by_id() -> None:
    calls = assemble(
        [first(0, "c1", "read_file", '{"path": "a"}')],
        [first(0, "c2", "list_directory", '{"path": "."}')],
    )
    assert calls == [("c1", "read_file", {"path": "a"}, None), ("c2", "list_directory", {"path": "."}, None)]


def test_index_zero_new_id_with_fragments_after() -> None:
    calls = assemble([first(0, "c1", "read_file", "")], [frag(0, '{"path": "a"}')], [first(0, "c2", "read_file", "")])
    calls2 = assemble(
        [first(0, "c1", "read_file", "")],
        [frag(0, '{"path": "a"}')],
        [first(0, "c2", "read_file", "")],
        [frag(0, '{"path": "b"}')],
    )
    assert calls[0] == ("c1", "read_file", {"path": "a"}, None)
    assert calls2 == [("c1", "read_file", {"path": "a"}, None), ("c2", "read_file", {"path": "b"}, None)]


def test_several_complete_calls_in_one_delta() -> None:
    calls = assemble([first(0, "c1", "read_file", '{"path": "a"}'), first(1, "c2", "read_file", '{"path": "b"}')])
    assert [c[2] for c in calls] == [{"path": "a"}, {"path": "b"}]


def test_first_index_is_one() -> None:
    calls = assemble([first(1, "toolu_1", "read_file")], [frag(1, '{"path": "a"}')])
    assert calls == [("toolu_1", "read_file", {"path": "a"}, None)]


def test_id_repeated_on_every_fragment_is_not_concatenated() -> None:
    calls = assemble(
        [first(0, "call_123", "read_file")], [frag(0, '{"path":', id="call_123")], [frag(0, '"a"}', id="call_123")]
    )
    assert calls == [("call_123", "read_file", {"path": "a"}, None)]


def test_empty_or_null_id_on_continuations_does_not_start_a_call() -> None:
    calls = assemble([first(0, "c1", "read_file")], [frag(0, '{"path":', id="")], [frag(0, '"a"}', id=None)])
    assert calls == [("c1", "read_file", {"path": "a"}, None)]


def test_no_id_anywhere_gets_a_stable_synthesized_id() -> None:
    chunks = ([first(0, None, "read_file")], [frag(0, '{"path": "a"}')], [first(1, None, "list_directory", "{}")])
    calls = assemble(*chunks)
    assert [c[0] for c in calls] == ["call_0_0", "call_1_1"]
    assert assemble(*chunks) == calls
    assert len({c[0] for c in calls}) == 2


def test_name_repeated_on_every_fragment_is_not_concatenated() -> None:
    calls = assemble(
        [first(0, "c1", "read_file", '{"pa')],
        [first(0, None, "read_file", 'th": ')],
        [first(0, None, "read_file", '"a"}')],
    )
    assert calls == [("c1", "read_file", {"path": "a"}, None)]


def test_name_empty_on_later_fragments_and_name_in_pieces() -> None:
    assert assemble([first(0, "c1", "read_file")], [first(0, None, "", '{"path": "a"}')])[0][1] == "read_file"
    assert assemble([first(0, "c1", "read_")], [first(0, None, "file", "{}")])[0][1] == "read_file"


def test_arguments_null_or_missing_on_the_first_fragment() -> None:
    first_null = first(0, "c1", "read_file", None)
    first_missing = {"index": 0, "id": "c2", "function": {"name": "read_file"}}
    assert assemble([first_null], [frag(0, '{"path": "a"}')])[0][2] == {"path": "a"}
    assert assemble([first_missing], [frag(0, '{"path": "a"}')])[0][2] == {"path": "a"}


def test_arguments_missing_entirely_means_no_parameters() -> None:
    assert assemble([{"index": 0, "id": "c1", "function": {"name": "list_directory"}}]) == [
        ("c1", "list_directory", {}, None)
    ]


def test_empty_object_sent_first_then_the_real_object() -> None:
    assert assemble([first(0, "c1", "read_file", "{}")], [frag(0, '{"path": "a"}')])[0][2] == {"path": "a"}
    assert assemble([first(0, "c1", "read_file", "{}")], [frag(0, '{"path": '), frag(0, '"a"}')])[0][2] == {"path": "a"}


def test_arguments_as_a_json_object_instead_of_a_string() -> None:
    assert assemble([first(0, "c1", "read_file", {"path": "a", "limit": 5})])[0][2] == {"path": "a", "limit": 5}


def test_empty_argument_fragments_interleaved() -> None:
    calls = assemble([first(0, "c1", "read_file", "")], [frag(0, "")], [frag(0, '{"path": "a"}')], [frag(0, "")])
    assert calls[0][2] == {"path": "a"}


def test_duplicate_summary_chunk_repeating_the_whole_call() -> None:
    calls = assemble(
        [first(0, "c1", "read_file", "")],
        [frag(0, '{"path": "a"}')],
        [first(0, "c1", "read_file", '{"path": "a"}')],
    )
    assert calls == [("c1", "read_file", {"path": "a"}, None)]


def test_type_missing_and_empty_tool_call_lists() -> None:
    acc = ToolCalls().feed([]).feed([{"index": 0, "id": "c1", "function": {"name": "read_file", "arguments": "{}"}}])
    acc = acc.feed([]).feed(None)
    assert [(c.id, c.name, c.arguments, c.error) for c in acc.finish()] == [
        ("c1", "read_file", "{}", explained("read_file", "read_file: missing required parameter path"))
    ]


def test_unusable_calls_say_why() -> None:
    bad_json, not_object, no_name = assemble(
        [first(0, "c1", "read_file", '{"path": ')],
        [first(1, "c2", "read_file", "[1, 2]")],
        [first(2, "c3", None, "{}")],
    )
    assert bad_json[2] is None and bad_json[3] is not None and "not valid JSON" in bad_json[3]
    assert not_object[2] is None and not_object[3] is not None and "not a JSON object" in not_object[3]
    assert no_name[3] == "the tool call has no function name"


def test_counters_count_distinct_calls_and_every_fragment() -> None:
    acc = ToolCalls().feed([first(0, "abc", "read_file", "")])
    for _ in range(1000):
        acc.feed([frag(0, "x", id="abc")])
    assert acc.distinct_calls == 1
    assert acc.fragment_bytes == 3 + 9 + 1000 * (3 + 1)


# ---------------------------------------------------------------- properties

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
arg_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)


@settings(max_examples=200, deadline=None)
@given(objects=st.lists(arg_objects, min_size=1, max_size=4), data=st.data())
def test_random_arguments_split_and_interleaved_reassemble_exactly(
    objects: list[dict[str, Any]], data: st.DataObject
) -> None:
    queues: list[list[dict[str, Any]]] = []
    for index, obj in enumerate(objects):
        text = json.dumps(obj, ensure_ascii=data.draw(st.booleans()))
        cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        queue = [first(index, f"id{index}", "write_file", pieces[0])]
        queue += [frag(index, piece) for piece in pieces[1:]]
        queues.append(queue)
    acc = ToolCalls()
    while any(queues):
        live = [q for q in queues if q]
        queue = live[data.draw(st.integers(0, len(live) - 1))]
        acc.feed([queue.pop(0)])
    expected = [(f"id{i}", o, _parse_error("write_file", o)) for i, o in enumerate(objects)]
    assert [(c.id, msgspec.json.decode(c.arguments), c.error) for c in acc.finish()] == expected


def _parse_error(name: str, args: object) -> str | None:
    parsed = parse_args(name, args)
    return explained(name, parsed) if isinstance(parsed, str) else None


@settings(max_examples=300, deadline=None)
@given(
    chunks=st.lists(
        st.one_of(
            json_values,
            st.lists(
                json_values
                | st.dictionaries(
                    st.sampled_from(["index", "id", "type", "function", "name", "arguments"]),
                    json_values | st.dictionaries(st.sampled_from(["name", "arguments"]), json_values, max_size=2),
                    max_size=4,
                ),
                max_size=4,
            ),
        ),
        max_size=6,
    )
)
def test_arbitrary_json_shaped_deltas_never_raise(chunks: list[Any]) -> None:
    acc = ToolCalls()
    for chunk in chunks:
        acc = acc.feed(chunk)
    for call in acc.finish():
        assert isinstance(call.id, str) and call.id
        assert (call.args is None) == (call.error is not None) or call.name == ""


def test_arguments_nested_too_deeply_are_an_error_not_a_crash() -> None:
    deep = "[" * 5000 + "]" * 5000
    fragments = [deep[i : i + 500] for i in range(0, len(deep), 500)]
    acc = ToolCalls().feed([{"index": 0, "id": "c", "function": {"name": "read_file", "arguments": ""}}])
    for fragment in fragments:
        acc = acc.feed([{"index": 0, "function": {"arguments": fragment}}])
    [call] = acc.finish()
    assert call.args is None and call.error is not None and "nested" in call.error
    [pairs] = ToolCalls().feed([{"index": 0, "id": "d", "function": {"name": "x", "arguments": "{}" * 3000}}]).finish()
    assert pairs.args is None and pairs.error is not None


# ---------------------------------------------------------------- three shapes seen in the wild (issue 18 §7)


def test_arguments_null_on_a_call_without_parameters_runs_as_empty_object() -> None:
    assert assemble([first(0, "c1", "list_directory", None)], [frag(0, None)]) == [("c1", "list_directory", {}, None)]


def test_phantom_call_with_empty_id_and_no_function_is_dropped() -> None:
    phantom = {"index": 1, "id": "", "type": "function"}
    assert assemble([first(0, "c1", "read_file", '{"path": "a"}')], [phantom], [{"index": 2, "id": None}]) == [
        ("c1", "read_file", {"path": "a"}, None)
    ]
    assert assemble([{"index": 0, "id": "", "function": {}}]) == []  # alone: no call at all, not an error call


def test_an_id_that_changes_on_every_fragment_is_one_call_keyed_by_index() -> None:
    calls = assemble(
        [first(0, "id-1", "read_file", "")],
        [frag(0, '{"path": ', id="id-2")],
        [frag(0, '"a.txt"}', id="id-3")],
    )
    assert calls == [("id-1", "read_file", {"path": "a.txt"}, None)]


def test_arguments_that_are_no_json_object_go_to_the_row_up_to_written_max_chars() -> None:
    for size in (WRITTEN_MAX_CHARS, WRITTEN_MAX_CHARS + 1):
        text = "{" + "x" * (size - 1)
        [call] = ToolCalls().feed([first(0, "c1", "write_file", text)]).finish()
        assert call.arguments == "{}" and call.written == text[:WRITTEN_MAX_CHARS] and not call.cut
    [call] = ToolCalls().feed([first(0, "c1", "read_file", '{"path": "a"}')]).finish(stream_ended=True)
    assert call.args is not None and not call.cut and call.written == ""  # whole: a failure after it cut nothing
    # The call a failure stopped before any of its arguments came (the 65th of an answer over the call bound).
    started = ToolCalls().feed([first(0, "c1", "read_file", '{"path": "a"}'), first(1, "c2", "read_file", "")])
    whole, cut = started.finish(stream_ended=True)
    # Cut mid-arguments: what came is kept for the row, and said (its start) to the model.
    partial = '{"path": "notes.md", "content": "' + "x" * 100
    [cut_mid] = ToolCalls().feed([first(0, "c1", "write_file", partial)]).finish(stream_ended=True)
    assert (cut_mid.cut, cut_mid.written, cut_mid.arguments) == (True, partial, "{}")
    assert cut_mid.error == f"its arguments were cut off after {len(partial)} characters: {partial[:80]!r}…"
    assert not whole.cut and (cut.cut, cut.args, cut.error) == (
        True,
        None,
        "it was cut off before any of its arguments came",
    )
    finished = started.finish()[1].error  # a finished stream: its error, with what the tool takes
    assert finished == explained("read_file", "read_file: missing required parameter path")


def test_a_named_fragment_costs_the_completeness_check_no_rescan_of_the_arguments(monkeypatch: Any) -> None:
    # Found by review: each fragment repeating the name (no index, no id) asked whether the call's arguments so far
    # were a whole object by decoding all of them: arguments ending in "}" piece by piece ('a}' 20 000 times, inside
    # an unterminated string) cost the LLM process time quadratic in the episode (~4 min of CPU within
    # EPISODE_MAX_BYTES). Now what was decoded stays within a few times what arrived.
    decoded = 0
    real_decode = msgspec.json.decode

    def counting(text: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal decoded
        decoded += len(text)
        return real_decode(text, *args, **kwargs)

    monkeypatch.setattr(msgspec.json, "decode", counting)
    pieces = 2000
    chunks = [[first(None, None, "read_file", " ")] for _ in range(pieces)]  # white space first, piece by piece
    chunks += [[first(None, None, "read_file", '{"path": "')]]
    chunks += [[first(None, None, "read_file", "a}")] for _ in range(pieces)]
    chunks += [[first(None, None, "read_file", '"}')], [first(None, None, "list_directory", '{"path": "b"}')]]
    calls = assemble(*chunks)
    assert [c[1:3] for c in calls] == [
        ("read_file", {"path": "a}" * pieces}),
        ("list_directory", {"path": "b"}),
    ]
    arrived = sum(len(chunk[0]["function"]["arguments"]) for chunk in chunks)
    assert decoded <= 4 * arrived


def test_the_completeness_of_arguments_reads_strings_escapes_and_nesting() -> None:
    # Braces and quotes inside strings, escapes split across fragments, nested objects and arrays: a named fragment
    # after them starts a new call only once the first object is whole.
    pieces = ['{"path": "x\\', '"}{', "\\\\", '", "n": {"a": [1, {"b": "}"}', "]", "}", "}"]
    chunks = [[first(None, None, "read_file", pieces[0])]]
    chunks += [[first(None, None, "read_file", piece)] for piece in pieces[1:]]
    chunks += [[first(None, None, "read_file", '{"path": "c"}')]]
    calls = assemble(*chunks)
    whole = json.loads("".join(pieces))
    assert [c[2] for c in calls] == [None, {"path": "c"}]
    assert calls[0][3] is not None and "n" in whole  # read_file takes no "n": the first call is refused, but whole
