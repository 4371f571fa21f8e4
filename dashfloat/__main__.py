"""`python -m dashfloat`."""

from dashfloat.cli import entry

entry()
