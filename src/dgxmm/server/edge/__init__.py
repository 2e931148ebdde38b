"""The HTTP edge: what every route shares between the wire and the layers below.

- ``bodies``: request bodies, checked by pydantic (strict, unknown fields refused);
- ``body_limit``: a body past ``MAX_BODY_BYTES`` refused with 413 before it is read;
- ``responses``: domain errors as HTTP answers, the one place that knows their statuses;
- ``openapi``: every status each operation answers, in the OpenAPI document;
- ``paging``: ``limit`` and an opaque ``cursor`` for every list;
- ``deps``: the request dependencies: the app's services, who is asking, the checked ids.
"""

__all__: list[str] = []
