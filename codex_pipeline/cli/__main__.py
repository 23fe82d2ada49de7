"""``python -m codex_pipeline.cli``."""

import sys

from codex_pipeline.cli.app import main

sys.exit(main())
