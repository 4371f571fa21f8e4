"""The LLM worker's requests without the modules it never uses (dashfloat/_startup/requests_import.py), in fresh
interpreters: the test process imported requests whole long ago."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import dashfloat
from dashfloat._startup.requests_import import UNUSED_TOP_LEVEL, import_requests

CHECKOUT = str(Path(dashfloat.__file__).resolve().parent.parent)


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(code)],
        cwd=CHECKOUT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_worker_imports_requests_without_a_charset_detector_or_importlib_metadata() -> None:
    out = _run(
        """
        import sys
        finders = list(sys.meta_path)
        import importlib
        from dashfloat.llm._serve import HTTP_STACK_MODULES  # what the worker imports on its stack thread
        for module in HTTP_STACK_MODULES:
            importlib.import_module(module)
        kept_out = [m for m in sys.modules if m.partition(".")[0] in ("charset_normalizer", "chardet")]
        print("requests" in sys.modules, "importlib.metadata" in sys.modules, kept_out, sys.meta_path == finders)
        """
    )
    assert out.split() == ["True", "False", "[]", "True"]  # no finder of ours left behind


def test_the_modules_kept_out_are_importable_afterwards_and_real() -> None:
    out = _run(
        """
        import sys
        import dashfloat.llm._stream
        import requests, urllib3.http2
        import importlib.metadata
        import charset_normalizer
        print(importlib.metadata.version("requests") == requests.__version__)
        print(urllib3.http2.version("urllib3") == urllib3.__version__)  # what turning HTTP/2 on would call
        print(sys.modules["importlib"].metadata is importlib.metadata, charset_normalizer.__name__)
        """
    )
    assert out.split() == ["True", "True", "True", "charset_normalizer"]


def test_requests_without_a_detector_decodes_an_undeclared_body_as_utf8() -> None:
    out = _run(
        """
        import http.server, threading
        import dashfloat.llm
        from dashfloat.llm._http import process_session

        BODY = '{"say": "héllo ✓"}'.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")  # no charset declared
                self.send_header("Content-Length", str(len(BODY)))
                self.end_headers()
                self.wfile.write(BODY)

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        response = process_session().get(f"http://127.0.0.1:{server.server_address[1]}/")
        print(response.encoding, response.apparent_encoding, response.text == BODY.decode(), response.json()["say"])
        server.shutdown()
        """
    )
    assert out.split() == ["None", "utf-8", "True", "héllo", "✓"]


def test_nothing_is_done_once_requests_is_imported() -> None:
    assert "requests" in sys.modules
    finders = list(sys.meta_path)
    import_requests()
    assert sys.meta_path == finders
    assert "charset_normalizer" in UNUSED_TOP_LEVEL


def test_http_client_comes_without_calendar_and_calendar_comes_whole_when_asked_for() -> None:
    """dashfloat/_startup/http_client_import.py (ADR 0056): http.client and email in, calendar not; email's one use
    of it still works, and a later import gets the real module."""
    out = _run(
        """
        import sys
        from dashfloat._startup import http_client_import as _http_client
        import http.client, email.utils
        print("calendar" in sys.modules, "http.client" in sys.modules)
        when = email.utils.mktime_tz(email.utils.parsedate_tz("Sat, 05 Dec 2026 09:00:00 +0000"))
        import calendar
        print(when == calendar.timegm((2026, 12, 5, 9, 0, 0)), calendar.__spec__ is not None, calendar.month_name[12])
        """
    )
    assert out.split("\n")[:2] == ["False True", "True True December"]


def test_a_calendar_imported_before_is_left_alone() -> None:
    out = _run(
        """
        import calendar
        from dashfloat._startup import http_client_import as _http_client
        import sys
        print(sys.modules["calendar"] is calendar)
        """
    )
    assert out.strip() == "True"
