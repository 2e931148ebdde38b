"""Where a webhook may point: never link-local or a cloud's metadata address; private
networks only when the operator allows them (``dgxmm serve --alerts-allow-private-networks``).

A channel's URL is checked when it is made (its host, when it is an address in any
spelling: ``2852039166``, ``0xa9fea9fe``, ``::ffff:169.254.169.254``; and ``localhost``), and
again at every send on the addresses its name resolves to then: a name may be rebound to
another address after the check (DNS rebinding), so the sender connects to the address it
checked, never to a second resolution. An address inside IPv6 (v4-mapped, v4-compatible,
6to4, NAT64) is judged as the IPv4 address it carries too.

Why: a delivery's log (its status code, how long it took) would otherwise make the alerts
page a probe of the server's own networks, and a metadata address hands out credentials.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from urllib.parse import unquote

from dgxmm.errors import DefinitionError, DgxmmError

__all__ = ["Destinations", "Refused", "Verdict", "judge"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

ALLOW_FLAG = "--alerts-allow-private-networks"

# Link-local (169.254.0.0/16 holds the clouds' metadata address 169.254.169.254), AWS's IPv6
# metadata address, and what is no one host (multicast, reserved, broadcast).
_NEVER = tuple(
    ipaddress.ip_network(n)
    for n in (
        "169.254.0.0/16",
        "fe80::/10",
        "fd00:ec2::254/128",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "ff00::/8",
    )
)
# This machine and the private networks around it (RFC 1918, shared address space, unique
# local IPv6), and "this host" (0.0.0.0 connects to it on Linux).
_PRIVATE = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "::/128",
        "::1/128",
        "fc00::/7",
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_V4_COMPATIBLE = ipaddress.ip_network("::/96")


class Verdict(Enum):
    """What becomes of an address."""

    ALLOWED = "allowed"
    PRIVATE = "private"  # allowed only with the operator's setting
    NEVER = "never"


class Refused(DgxmmError):
    """A webhook's address that is not allowed (the log says only that)."""


def judge(address: Address) -> Verdict:
    """Return the verdict on ``address``, and on the IPv4 address it carries, if any."""
    verdicts = {_judge_one(a) for a in (address, *_carried(address))}
    for verdict in (Verdict.NEVER, Verdict.PRIVATE):
        if verdict in verdicts:
            return verdict
    return Verdict.ALLOWED


def _judge_one(address: Address) -> Verdict:
    if any(address in n for n in _NEVER if n.version == address.version):
        return Verdict.NEVER
    if any(address in n for n in _PRIVATE if n.version == address.version):
        return Verdict.PRIVATE
    return Verdict.ALLOWED


def _carried(address: Address) -> list[Address]:
    """Return the IPv4 address an IPv6 one carries (mapped, compatible, 6to4, NAT64)."""
    if address.version == 4:
        return []
    assert isinstance(address, ipaddress.IPv6Address)
    found: list[Address] = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _NAT64 or (address in _V4_COMPATIBLE and int(address) > 1):
        found.append(low)
    return found


def literal(host: str) -> Address | None:
    """Return the address ``host`` spells, in any spelling the system's resolver takes."""
    bare = unquote(host).strip("[]").split("%", 1)[0].rstrip(".").lower()
    if bare == "localhost" or bare.endswith(".localhost"):
        return ipaddress.IPv4Address("127.0.0.1")  # RFC 6761: always this machine
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if bare and all(c in "0123456789abcdefx." for c in bare):
        try:  # inet_aton's spellings: 2852039166, 0251.0376.0251.0376, 0xa9fea9fe, 127.1
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None


async def resolve(host: str, port: int) -> list[str]:
    """Return the addresses ``host`` resolves to now (the system's resolver)."""
    found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(sockaddr[0]) for *_, sockaddr in found]


@dataclass(frozen=True, slots=True, kw_only=True)
class Destinations:
    """The operator's rule on private networks, and how names are resolved at send time."""

    allow_private: bool = False
    resolve: Resolver = dataclasses.field(default=resolve, repr=False)

    def check_host(self, host: str, field: str = "url") -> None:
        """Refuse a URL's host that spells an address not allowed (``DefinitionError``)."""
        address = literal(host)
        if address is None:
            return  # a name: its addresses are checked at each send
        verdict = judge(address)
        if verdict is Verdict.NEVER:
            raise DefinitionError(
                field,
                f"address {address} refused: link-local and cloud metadata addresses are "
                "never allowed",
            )
        if verdict is Verdict.PRIVATE and not self.allow_private:
            raise DefinitionError(
                field,
                f"address {address} is on a private network or this machine: refused unless "
                f"the operator allows it (dgxmm serve {ALLOW_FLAG})",
            )

    async def pick(self, host: str, port: int) -> str:
        """Return the address to connect to for ``host``: every one it resolves to allowed.

        A name that resolves to any address not allowed is refused whole (``Refused``): a
        rebinding answer mixes a good address with the one it aims at.
        """
        address = literal(host)
        found = [str(address)] if address is not None else await self.resolve(host, port)
        addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
        if not addresses or not all(self._allows(a) for a in addresses):
            raise Refused("refused: address not allowed")
        return str(addresses[0])

    def _allows(self, address: Address) -> bool:
        verdict = judge(address)
        return verdict is Verdict.ALLOWED or (verdict is Verdict.PRIVATE and self.allow_private)
