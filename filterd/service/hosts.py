"""Which `Host` headers a server answers (`AllowedHosts`): the defence against DNS rebinding,
for the HTTP API's server and the observe server alike.

A page on another site can point its own name at this machine's address (DNS rebinding); the
browser then sends that page's requests here with the page's name in `Host` and lets the page
read the answers. A server that answers only Host headers naming it closes that door. An IP
address cannot be rebound, but a name can, so a name must be listed; `name:port` allows that
port only, `name` any port.

The default list is the bound address, `localhost`, `127.0.0.1` and `[::1]`, each with the
server's port (any port when the port is 0, "pick a free one"). A server bound to every
interface (`0.0.0.0`, `::`) is reached by whichever of the machine's addresses a client knows,
so its default also allows any IP address on its port. A request without a Host header (an
HTTP/1.0 health checker) is answered: browsers always send one.

    >>> hosts = AllowedHosts.of([], "127.0.0.1", 8108)
    >>> [hosts.allows(h) for h in ("127.0.0.1:8108", "LOCALHOST:8108", "[::1]:8108", None)]
    [True, True, True, True]
    >>> foreign = ("evil.example:8108", "localhost:9999", "localhost", "10.0.0.1:8108")
    >>> [hosts.allows(h) for h in foreign]
    [False, False, False, False]
    >>> AllowedHosts.of([], "0.0.0.0", 9108).allows("10.1.2.3:9108")
    True
    >>> listed = AllowedHosts.of(["filterd.example.net", "ops.example.net:8443"], "0.0.0.0", 8108)
    >>> named = ("filterd.example.net", "ops.example.net:8443", "ops.example.net")
    >>> [listed.allows(h) for h in named]
    [True, True, False]
    >>> listed.allows("10.1.2.3:8108"), listed.allows("ops.example.net", "https")
    (False, False)
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

WILDCARDS = frozenset({"0.0.0.0", "::", "[::]", ""})  # bound to every interface
LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# a DNS name (letters, digits, '-', '_' and dots) or a bracketed IPv6 address, then an optional
# port: anything else is not a host this server has
_HOST = re.compile(r"(?P<name>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)(?::(?P<port>[0-9]{1,5}))?")


def parse_host(text: str) -> tuple[str, int | None] | None:
    """(name, port) of a Host header's value or an allow-list entry, normalised: lower case, no
    trailing dot, IPv6 in brackets in its short form; port None when none is given. None when
    `text` is not one.

    >>> parse_host("Filterd.Example.NET.:8108"), parse_host("[0:0::1]"), parse_host("a b")
    (('filterd.example.net', 8108), ('[::1]', None), None)
    """
    found = _HOST.fullmatch(text.strip())
    if found is None:
        return None
    name, port = found["name"].lower().rstrip("."), found["port"]
    if name.startswith("["):
        try:
            name = f"[{ipaddress.IPv6Address(name[1:-1]).compressed}]"
        except ValueError:
            return None
    number = None if port is None else int(port)
    if not name or (number is not None and number > 65535):
        return None
    return name, number


def is_address(name: str) -> bool:
    """Whether a parsed host name is an IP address (which no one can rebind)."""
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class AllowedHosts:
    """The (name, port) pairs a server answers to, port None for any; `any_address`: also any
    IP address on `address_port` (None: any port)."""

    entries: frozenset[tuple[str, int | None]]
    any_address: bool = False
    address_port: int | None = None

    @classmethod
    def of(cls, configured: Sequence[str], bound: str, port: int) -> AllowedHosts:
        """The allow-list `configured` (ValueError naming an entry that is not a host), or, when
        it is empty, the default of a server bound to `bound`:`port` (see the module)."""
        if configured:
            entries = set()
            for text in configured:
                parsed = parse_host(text)
                if parsed is None:
                    raise ValueError(
                        f"{text!r} is not a host name or address with an optional :port"
                    )
                entries.add(parsed)
            return cls(frozenset(entries))
        any_port = port or None  # port 0: a free port picked at start-up
        names = {*LOOPBACK, *([] if bound in WILDCARDS else [bound])}
        entries = set()
        for name in names:
            parsed = parse_host(f"[{name}]" if ":" in name and not name.startswith("[") else name)
            if parsed is not None:
                entries.add((parsed[0], any_port))
        return cls(frozenset(entries), any_address=bound in WILDCARDS, address_port=any_port)

    def allows(self, host: str | None, scheme: str = "http") -> bool:
        """Whether a request with this Host header (None: none) over `scheme` is answered; a
        Host without a port means the scheme's default port."""
        if not host:
            return True
        parsed = parse_host(host)
        if parsed is None:
            return False
        name, port = parsed
        if port is None:
            port = DEFAULT_PORTS.get(scheme, 80)
        if (name, port) in self.entries or (name, None) in self.entries:
            return True
        return (
            self.any_address
            and is_address(name)
            and (self.address_port is None or port == self.address_port)
        )
