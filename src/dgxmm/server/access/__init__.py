"""Who may do what: API tokens and their roles, and what a viewer sees masked.

- ``tokens``: bearer tokens (admin, viewer), kept as their SHA-256, with expiry and revocation;
- ``tables``: the ``api_tokens`` table;
- ``redaction``: a deployment as a viewer reads it, its secrets masked.
"""

__all__: list[str] = []
