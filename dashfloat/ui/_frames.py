"""Frame marks: with ``DASHFLOAT_FRAME_MARKS=1`` the UI ends every frame it draws with a private OSC sequence
saying how many characters of answer text that frame shows, so a benchmark can tell when a token reached the
terminal from the bytes alone (no terminal emulator in the measuring process). Off, it costs one flag test."""

from __future__ import annotations

import re
from collections.abc import Mapping

FRAME_MARKS_ENV = "DASHFLOAT_FRAME_MARKS"
FRAME_MARK_OSC = 7707
"""An OSC number no terminal uses: terminals ignore an OSC they do not know."""
_MARK = re.compile(rb"\x1b\]%d;(\d+)\x07" % FRAME_MARK_OSC)


def frame_marks_on(env: Mapping[str, str]) -> bool:
    return env.get(FRAME_MARKS_ENV) == "1"


def frame_mark(shown_chars: int) -> str:
    """The sequence written after a frame that shows ``shown_chars`` characters of answer text."""
    return f"\x1b]{FRAME_MARK_OSC};{shown_chars}\x07"


def read_frame_marks(data: bytes) -> list[int]:
    """The answer-text counts of the frame marks in ``data``, in order."""
    return [int(count) for count in _MARK.findall(data)]
