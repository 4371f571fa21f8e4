"""sseclient-py's SSE field parser, for the events the one-line reader in ``_framing`` does not take.

Its own module, imported on the first such event: sseclient imports ``logging`` (and ``traceback``, ``string``)
at import, and a stream of one-line ``data:`` events, what every provider we know sends, never needs it. In the
LLM worker, which imports after its fork, that import costs ~2 MB of private memory (issue 19: idle memory,
ADR 0053).
"""

from __future__ import annotations

from collections.abc import Iterator

import sseclient


class WholeEventClient(sseclient.SSEClient):
    """sseclient-py's field parser over a source that already yields whole events (no re-stitching)."""

    def __init__(self, events: Iterator[bytes]) -> None:
        super().__init__(events)
        self._whole = events

    def _read(self) -> Iterator[bytes]:
        yield from self._whole
