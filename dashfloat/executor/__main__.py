"""Standalone executor: see ``python -m dashfloat.executor --help``."""

import sys

from dashfloat._startup.kept_out import import_msgspec

import_msgspec()  # before anything imports it: a Ctrl-C must not interrupt its initialisation

from dashfloat.executor._standalone import main  # noqa: E402 - msgspec first, see above

sys.exit(main())
