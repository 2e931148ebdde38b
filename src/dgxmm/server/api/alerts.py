"""The alerts API (admins only): channels, rules, test sends and the delivery log.

A channel's secret is in the answer that made it (``POST /api/alerts/channels``) and in the
one that replaced it (``.../secret``), never again; its URL is shown as scheme and host.
A body's fields are checked by the alerts' own checks, so every wrong field is named in one
400 (``errors``) and nothing changes. A test send is queued: the answer names the delivery,
which ``GET /api/alerts/deliveries/{id}`` shows once the sender tried it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import ConfigDict

from dgxmm.errors import DefinitionError
from dgxmm.server.edge.bodies import Body
from dgxmm.server.edge.deps import Admin, AlertsDep, HostDep, PathId, QueryId
from dgxmm.server.edge.openapi import answers
from dgxmm.server.lists.jobs import iso

__all__ = ["router"]

router = APIRouter(prefix="/api/alerts", tags=["alerts"])


class _Loose(Body):
    """A body whose fields the alerts' checks read (all of them named at once in a 400)."""

    model_config = ConfigDict(extra="allow", strict=False)

    def keys(self) -> dict[str, Any]:
        """Return the fields that were sent, unknown ones too (the checks refuse those)."""
        return self.model_dump(exclude_unset=True)


class NewChannel(_Loose):
    """``{name, url, format?}``: a webhook; ``format`` is generic (default), slack or teams."""

    name: Any = None
    url: Any = None
    format: Any = None


class NewRule(_Loose):
    """``{name, condition, channels, threshold?, window_minutes?, quiet_minutes?, enabled?}``."""

    name: Any = None
    condition: Any = None
    channels: Any = None
    threshold: Any = None
    window_minutes: Any = None
    quiet_minutes: Any = None
    enabled: Any = None


@router.get("/channels")
def list_channels(alerts: AlertsDep, _: Admin) -> dict[str, Any]:
    """Every channel, by name (no secret, the URL as scheme and host)."""
    return {"channels": [c.to_json() for c in alerts.channels.list()]}


@router.post("/channels", responses=answers(400, 409))
def create_channel(body: NewChannel, alerts: AlertsDep, who: Admin) -> dict[str, Any]:
    """Make a channel; the answer holds its secret, shown only this once."""
    channel, secret = alerts.channels.create(body.keys(), actor=who.actor)
    return {"channel": channel.to_json(), "secret": secret}


@router.get("/channels/{channel_id}", responses=answers(404))
def get_channel(channel_id: PathId, alerts: AlertsDep, _: Admin) -> dict[str, Any]:
    """One channel."""
    return alerts.channels.get(channel_id).to_json()


@router.post("/channels/{channel_id}/secret", responses=answers(404))
def new_secret(channel_id: PathId, alerts: AlertsDep, who: Admin) -> dict[str, Any]:
    """Replace a channel's secret; the answer holds the new one, shown only this once."""
    channel, secret = alerts.channels.new_secret(channel_id, actor=who.actor)
    return {"channel": channel.to_json(), "secret": secret}


@router.post("/channels/{channel_id}/test", responses=answers(404))
def test_channel(channel_id: PathId, alerts: AlertsDep, who: Admin) -> dict[str, Any]:
    """Queue one example message to the channel; answer its delivery's id."""
    return {"delivery": alerts.test(channel_id, actor=who.actor)}


@router.delete("/channels/{channel_id}", responses=answers(404))
def remove_channel(channel_id: PathId, alerts: AlertsDep, who: Admin) -> dict[str, Any]:
    """Remove a channel, its place in rules and its deliveries."""
    alerts.channels.remove(channel_id, actor=who.actor)
    return {"removed": channel_id}


@router.post("/key/rotate", responses=answers(409))
def rotate_key(alerts: AlertsDep, who: Admin) -> dict[str, Any]:
    """Make a new sealing key and seal every channel's URL and secret again under it."""
    return {"channels": alerts.rotate_key(actor=who.actor)}


@router.get("/rules")
def list_rules(alerts: AlertsDep, _: Admin) -> dict[str, Any]:
    """Every rule, by name, with its channels."""
    return {"rules": [r.to_json() for r in alerts.rules.list()]}


@router.post("/rules", responses=answers(400, 409))
def create_rule(body: NewRule, alerts: AlertsDep, who: Admin) -> dict[str, Any]:
    """Make a rule."""
    return alerts.rules.create(body.keys(), actor=who.actor).to_json()


class SwitchRule(_Loose):
    """``{enabled}``: true switches the rule on, false off."""

    enabled: Any = None


@router.post("/rules/{rule_id}/enabled", responses=answers(400, 404))
def switch_rule(rule_id: PathId, body: SwitchRule, alerts: AlertsDep, who: Admin) -> dict[str, Any]:
    """Switch a rule on or off; off, its open incidents close without a message."""
    keys = body.keys()
    unknown = sorted(set(keys) - {"enabled"})
    if unknown:
        raise DefinitionError(unknown[0], f"{unknown[0]} is not a known field (enabled)")
    return alerts.rules.switch(rule_id, keys.get("enabled"), actor=who.actor).to_json()


@router.delete("/rules/{rule_id}", responses=answers(404))
def remove_rule(rule_id: PathId, alerts: AlertsDep, who: Admin) -> dict[str, Any]:
    """Remove a rule (the messages it made stay in the log)."""
    alerts.rules.remove(rule_id, actor=who.actor)
    return {"removed": rule_id}


@router.get("/deliveries", responses=answers(400))
def list_deliveries(
    alerts: AlertsDep,
    host: HostDep,
    _: Admin,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    channel_id: QueryId = None,
) -> dict[str, Any]:
    """The delivery log, newest first: each message, its channel and every attempt."""
    entries = alerts.deliveries.log(limit=limit, channel_id=channel_id)
    return {
        "deliveries": [
            {**e.to_json(), "created_at": iso(e.delivery.created_at, host)} for e in entries
        ]
    }


@router.get("/deliveries/{delivery_id}", responses=answers(404))
def get_delivery(delivery_id: PathId, alerts: AlertsDep, _: Admin) -> dict[str, Any]:
    """One delivery with its message and attempts."""
    return alerts.deliveries.get(delivery_id).to_json()
