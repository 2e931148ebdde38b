"""The savings lab: request traces replayed through dgxmm's own decisions, against an oracle.

- ``trace``: a request trace as columns (arrivals, model, token counts).
- ``ledger``: held, freed and cold in DESIGN.md's words (``Footprint``, ``Timeline``,
  ``Ledger``), one accounting for every policy.
- ``oracle``: the most memory any policy could free without a cold request.
"""

from dgxmm.lab.ledger import Footprint as Footprint
from dgxmm.lab.ledger import Ledger as Ledger
from dgxmm.lab.ledger import Phase as Phase
from dgxmm.lab.ledger import Timeline as Timeline
from dgxmm.lab.ledger import share_of_oracle as share_of_oracle
from dgxmm.lab.oracle import RoundTrip as RoundTrip
from dgxmm.lab.oracle import oracle_timeline as oracle_timeline
from dgxmm.lab.trace import NO_TOKENS as NO_TOKENS
from dgxmm.lab.trace import Trace as Trace

__all__ = [
    "NO_TOKENS",
    "Footprint",
    "Ledger",
    "Phase",
    "RoundTrip",
    "Timeline",
    "Trace",
    "oracle_timeline",
    "share_of_oracle",
]
