"""The console script's first step: nothing heavy is imported before Ctrl-C is handled.

``dashfloat.cli`` imports argparse and the catalogue (tens of milliseconds); a Ctrl-C landing in that import
would print a KeyboardInterrupt traceback from the script wrapper. Here it exits 130 quietly instead.
"""

from __future__ import annotations

import os
from typing import NoReturn

EXIT_INTERRUPTED = 130  # the same as dashfloat.cli's, which cannot be imported yet


def entry() -> NoReturn:
    """Import the command line under a Ctrl-C guard, then run it."""
    try:
        from dashfloat.cli import entry as run
    except KeyboardInterrupt:
        os._exit(EXIT_INTERRUPTED)
    run()
