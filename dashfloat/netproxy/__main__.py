"""``python -m dashfloat.netproxy CONFIG_JSON``: the registry proxy's process."""

import sys

from dashfloat.netproxy._server import main

main(sys.argv[1:])
