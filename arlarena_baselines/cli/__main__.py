"""``python -m arlarena_baselines.cli`` runs the ``arlarena`` command."""

import sys

from arlarena_baselines.cli import main

sys.exit(main())
