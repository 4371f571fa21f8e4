"""`python -m dashfloat`."""

import sys

from dashfloat.cli import main

sys.exit(main())
