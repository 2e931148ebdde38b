"""Run the stand-in: ``python -m dgxmm.fleet.standin --port P --model NAME``."""

from __future__ import annotations

import sys

from dgxmm.fleet.standin.server import main

sys.exit(main())
