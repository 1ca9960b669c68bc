"""``python -m socialjax.cli``: the ``socialjax`` command."""

import sys

from socialjax.cli import main

sys.exit(main())
