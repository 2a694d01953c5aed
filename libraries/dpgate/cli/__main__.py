"""``python -m dpgate.cli``: the same as the ``dpgate`` command."""

import sys

from dpgate.cli.main import main

sys.exit(main())
