import sys

from collapse_probe.cli import main

sys.exit(main())
