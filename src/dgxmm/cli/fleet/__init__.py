"""The fleet's command groups: deployments, schedules, insights, audit, proposals, savings,
the proxy. Each module is one group; ``cli/main.py`` registers them."""

__all__: list[str] = []
