"""The model ids a ``GET /models`` answer lists (``_window.model_ids``, /model's list, ADR 0077), and its bounds."""

from __future__ import annotations

from dashfloat.agent import _models
from dashfloat.jsonvalue import JsonValue
from dashfloat.llm._window import MODEL_ID_MAX_CHARS, MODELS_LISTED_MAX, model_ids


def test_ids_in_order_without_repeats_or_junk() -> None:
    body: JsonValue = {"data": [{"id": "b"}, {"id": "a"}, {"id": "b"}, {"id": 3}, {"name": "x"}, "junk", {"id": ""}]}
    assert model_ids(body) == ["b", "a"]
    assert model_ids(None) == [] and model_ids({"error": "no"}) == []


def test_the_list_and_an_id_are_bounded() -> None:
    many: JsonValue = {"data": [{"id": f"m{i}"} for i in range(MODELS_LISTED_MAX + 1)]}
    assert model_ids(many) == [f"m{i}" for i in range(MODELS_LISTED_MAX)]
    ids = ["x" * MODEL_ID_MAX_CHARS, "y" * (MODEL_ID_MAX_CHARS + 1)]
    assert model_ids({"data": [{"id": i} for i in ids]}) == ids[:1]


def test_the_listing_shows_at_most_its_bound_and_says_how_many_more() -> None:
    names = [f"m{i}" for i in range(_models.MODELS_SHOWN_MAX + 1)]
    lines = _models.listing(names, "m0", "http://h/v1").splitlines()
    assert lines[1] == "* m0" and len(lines) == 1 + _models.MODELS_SHOWN_MAX + 1
    assert lines[-1].strip().startswith("and 1 more")
    exact = _models.listing(names[:-1], "m0", "http://h/v1").splitlines()
    assert len(exact) == 1 + _models.MODELS_SHOWN_MAX and "more" not in exact[-1]
