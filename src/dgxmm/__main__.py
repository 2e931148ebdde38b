"""``python -m dgxmm``: the ``dgxmm`` command."""

from dgxmm.cli import main

main()
