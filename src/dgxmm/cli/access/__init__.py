"""Who may do what: ``dgxmm token`` (create, list, revoke by id). ``cli/main.py`` registers it."""

__all__: list[str] = []
