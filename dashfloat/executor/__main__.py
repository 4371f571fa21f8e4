"""Standalone executor: see ``python -m dashfloat.executor --help``."""

import sys

from dashfloat.executor._standalone import main

sys.exit(main())
