"""Run the stand-in: ``python -m dgxmm.standin --port P --model NAME``."""

from __future__ import annotations

import sys

from dgxmm.standin.server import main

sys.exit(main())
