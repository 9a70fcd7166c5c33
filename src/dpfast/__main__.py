"""``python -m dpfast``: the command line (:mod:`dpfast.cli`)."""
import sys

from .cli import main

sys.exit(main())
