"""The store's command groups: jobs, saved queries, the catalog's attic, store operations and
the catalog file. Each module is one group; ``cli/main.py`` registers them."""

__all__: list[str] = []
