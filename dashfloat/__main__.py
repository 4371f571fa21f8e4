"""`python -m dashfloat`."""

from dashfloat._entry import entry

entry()
