"""A provider's error body in another encoding than UTF-8 is read in it: the charset its Content-Type declares, else
its byte-order mark (a UTF-16 JSON body from a .NET server); else UTF-8, any byte that is not replaced. The body
was read as UTF-8 whatever it declared: "Mod\ufffdle introuvable", and a UTF-16 body's message was NULs between
letters (and its "context length exceeded" went unseen)."""

from __future__ import annotations

import json

import pytest

from dashfloat.llm._errors import as_utf8
from dashfloat.testing.sse_server import Reply, ScriptedServer
from tests.llm.conftest import Llm

FRENCH = {"error": {"message": "Modèle introuvable"}}


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (json.dumps(FRENCH, ensure_ascii=False).encode("latin-1"), "application/json; charset=ISO-8859-1", FRENCH),
        (json.dumps(FRENCH, ensure_ascii=False).encode("cp1252"), 'text/plain; charset="windows-1252"', FRENCH),
        (json.dumps(FRENCH, ensure_ascii=False).encode("utf-16"), "application/json", FRENCH),  # its BOM says
        (json.dumps(FRENCH, ensure_ascii=False).encode("utf-32"), None, FRENCH),
        (json.dumps(FRENCH, ensure_ascii=False).encode("utf-8-sig"), None, FRENCH),
        (json.dumps(FRENCH, ensure_ascii=False).encode(), "application/json; charset=utf-8", FRENCH),
    ],
)
def test_a_declared_or_marked_encoding_is_read_as_such(body: bytes, content_type: str | None, expected: object) -> None:
    assert json.loads(as_utf8(body, content_type)) == expected


@pytest.mark.parametrize("content_type", [None, "application/json", "text/plain; charset=no-such-codec"])
def test_an_undeclared_or_unknown_encoding_leaves_the_body_as_it_came(content_type: str | None) -> None:
    latin = "Modèle".encode("latin-1")
    assert as_utf8(latin, content_type) == latin  # read as UTF-8 downstream, the byte not UTF-8 replaced


def test_the_providers_message_in_latin_1_reaches_the_failure(llm: Llm, server: ScriptedServer) -> None:
    body = json.dumps(FRENCH, ensure_ascii=False).encode("latin-1")
    server.enqueue(Reply(404, {"Content-Type": "application/json; charset=iso-8859-1"}, [body]))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "not_found" and "Modèle introuvable" in failed.message


def test_a_utf_16_context_exceeded_is_recognised(llm: Llm, server: ScriptedServer) -> None:
    said = {"error": {"message": "This model's maximum context length is 8192 tokens, however you requested 9000"}}
    server.enqueue(Reply(400, {"Content-Type": "application/json"}, [json.dumps(said).encode("utf-16")]))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "context_exceeded"
