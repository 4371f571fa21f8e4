"""A read of a TLS stream takes every record that has already arrived, as a read of a plain socket takes every byte
(real TLS server on 127.0.0.1; the records are counted in the socket's queue before the read, so nothing is timed)."""

from __future__ import annotations

import socket
import ssl
import threading

import requests

from dashfloat.llm._http import _Adapter, body_chunks, process_session
from dashfloat.llm._limits import READ_CHUNK_BYTES
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event
from tests.e2e import wait_for
from tests.llm.conftest import TLS_DIR

HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream", "Accept-Encoding": "identity"}


def records_waiting(sock: socket.socket) -> int:
    """Whole TLS records received and not yet read (each: a 5-byte header whose last two bytes give its length)."""
    try:
        queued = socket.socket.recv(sock, 1 << 20, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return 0
    count = start = 0
    while start + 5 <= len(queued):
        start += 5 + int.from_bytes(queued[start + 3 : start + 5], "big")
        if start > len(queued):
            break
        count += 1
    return count


def _stream(
    server: ScriptedServer, items: list[bytes], chunked: bool = True
) -> tuple[requests.Response, ssl.SSLSocket]:
    """A streamed response whose body items the server wrote one by one (a TLS record each), then kept open."""
    server.enqueue(Reply(body=[*items, Pause(30)], chunked=chunked))
    sockets: list[socket.socket] = []
    session = process_session(sockets.append)
    verify = str(TLS_DIR / "cert.pem")
    response = session.post(
        f"{server.base_url}/chat/completions", data=b"{}", headers=HEADERS, stream=True, timeout=30, verify=verify
    )
    (sock,) = sockets
    assert isinstance(sock, ssl.SSLSocket)
    assert wait_for(lambda: records_waiting(sock) >= len(items))
    return response, sock


def test_one_read_takes_every_event_a_provider_wrote_on_its_own(tls_server: ScriptedServer) -> None:
    """A provider writes each event on its own: one TLS record per event. One read gives them all (it gave one, and
    the batching window then let a paced stream through at one event per window)."""
    events = [sse_event({"choices": [{"index": 0, "delta": {"content": f"t{n} "}}]}) for n in range(20)]
    response, _ = _stream(tls_server, events)
    with response:
        assert next(body_chunks(response)) == b"".join(events)


def test_a_body_that_ends_with_its_connection_reads_every_waiting_event_at_once(tls_server: ScriptedServer) -> None:
    """The same for an SSE server that neither chunks nor gives a length (HTTP/1.0 style: the body ends when the
    connection closes): the connection has let go of its socket, the read finds it behind http.client's reader."""
    events = [sse_event({"choices": [{"index": 0, "delta": {"content": f"t{n} "}}]}) for n in range(20)]
    response, _ = _stream(tls_server, events, chunked=False)
    with response:
        assert response.raw.connection is not None and response.raw.connection.sock is None
        assert next(body_chunks(response)) == b"".join(events)


def test_a_read_takes_at_most_read_chunk_bytes_of_waiting_records(tls_server: ScriptedServer) -> None:
    """READ_CHUNK_BYTES crossed: records waiting beyond it are left for the next read; nothing is lost."""
    comments = [b": " + bytes([97 + n]) * 10_000 + b"\n\n" for n in range(10)]  # ~100 KB in 10 records
    response, sock = _stream(tls_server, comments)
    with response:
        reads = body_chunks(response)
        first = next(reads)
        assert len(comments[0]) < len(first) <= READ_CHUNK_BYTES < sum(map(len, comments))
        assert sock.gettimeout() == 30  # the socket's timeout is back after the reads that did not wait
        data = first
        while len(data) < len(b"".join(comments)):
            data += next(reads)
        assert data == b"".join(comments)


def _records_per_request(context: ssl.SSLContext, listener: socket.socket, counts: list[int], requests: int) -> None:
    """A TLS server that counts the records each request arrives in (it reads the record layer itself, through a
    MemoryBIO) and answers ``ok``, for ``requests`` requests on one connection."""
    conn, _ = listener.accept()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_side=True)
    raw = b""
    handshaking = True
    records = 0
    request = b""
    with conn:
        while True:
            while len(raw) < 5 or len(raw) < 5 + int.from_bytes(raw[3:5], "big"):
                more = conn.recv(65536)
                if not more:
                    return
                raw += more
            size = 5 + int.from_bytes(raw[3:5], "big")
            record, raw = raw[:size], raw[size:]
            incoming.write(record)  # one record at a time: the handshake's last one is told from the request's
            if handshaking:
                try:
                    tls.do_handshake()
                    handshaking = False
                except ssl.SSLWantReadError:
                    pass
                conn.sendall(outgoing.read())
                continue
            records += 1
            try:
                while chunk := tls.read(65536):
                    request += chunk
            except ssl.SSLWantReadError:
                pass
            head, _, body = request.partition(b"\r\n\r\n")
            fields = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:] if b": " in line)
            length = int(fields.get(b"content-length", b"0"))
            if b"\r\n\r\n" in request and len(body) >= length:
                counts.append(records)
                records, request = 0, b""
                tls.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                conn.sendall(outgoing.read())
                if len(counts) == requests:
                    return


def test_a_request_goes_out_in_one_tls_record() -> None:
    """urllib3 writes a request's header block and its body apart (two records, two packets, two reads on the
    server); they go out in one write. A request without a body still goes, when its answer is awaited."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(TLS_DIR / "cert.pem", TLS_DIR / "key.pem")
    counts: list[int] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        server = threading.Thread(target=_records_per_request, args=(context, listener, counts, 3), daemon=True)
        server.start()
        url = f"https://127.0.0.1:{listener.getsockname()[1]}/v1"
        session = requests.Session()  # its own pool (closed below), connections made as the LLM process makes them
        session.mount("https://", _Adapter())
        verify = str(TLS_DIR / "cert.pem")
        body = b'{"messages": "' + b"x" * 5000 + b'"}'
        for response in (
            session.post(f"{url}/chat/completions", data=body, headers=HEADERS, timeout=30, verify=verify),
            session.get(f"{url}/props", timeout=30, verify=verify),
            session.post(f"{url}/chat/completions", data=body, headers=HEADERS, timeout=30, verify=verify),
        ):
            assert response.status_code == 200 and response.content == b"ok"
        session.close()
        server.join(30)
    assert not server.is_alive()
    assert counts == [1, 1, 1]
