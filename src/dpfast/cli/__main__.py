"""``python -m dpfast.cli``: the ``dpfast`` command, run as a module."""
import sys

from . import main

sys.exit(main())
