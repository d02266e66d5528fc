"""``python -m proofs_check.cli``: the ``fastslow`` console script."""

import sys

from proofs_check.cli import main

sys.exit(main())
