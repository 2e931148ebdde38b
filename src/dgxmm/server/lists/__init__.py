"""The lists the API and the pages both show, built once here.

- ``jobs``: the job list (system jobs, then user jobs), row by row;
- ``runs``: every job run and every deployment action, merged and paged, newest first.
"""

__all__: list[str] = []
