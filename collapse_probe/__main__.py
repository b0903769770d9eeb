"""``python -m collapse_probe COMMAND ...``: the same as the ``collapse-probe`` script."""

import sys

from collapse_probe.cli import main

sys.exit(main())
