"""The savings lab: request traces replayed through dgxmm's own decisions, against an oracle.

- ``trace``: a request trace as columns (arrivals, model, token counts).
"""

from dgxmm.lab.trace import NO_TOKENS as NO_TOKENS
from dgxmm.lab.trace import Trace as Trace

__all__ = ["NO_TOKENS", "Trace"]
