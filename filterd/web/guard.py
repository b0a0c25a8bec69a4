"""What the HTTP server refuses before any handler reads a request (`RequestGuard`, ASGI):

- 400: a Host header that names none of this server's hosts (`[http] allowed_hosts`,
  `filterd.service.hosts`), so that a page whose name was rebound to this address reads nothing;
- 403: a browser's request made by another site's page, to the API or to change anything (a
  method other than GET, HEAD and OPTIONS): the browser says so in `Sec-Fetch-Site`
  (`cross-site`, or `same-site`: another host of the same site), or, if it does not send that,
  in an `Origin` that is not this server's. Programs (curl, API clients) send neither and are
  not affected; the workbench's own forms and htmx requests come from its own origin. A link
  followed to a page (a GET) is let through: its session cookie is SameSite=Strict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from filterd.service.hosts import DEFAULT_PORTS, AllowedHosts, parse_host
from filterd.web.errors import Problem

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def cross_site(method: str, path: str, headers: Mapping[str, str]) -> str | None:
    """Why a request is refused as one another site's page made in a browser, None if it is not
    (`headers` with lower-case names).

    >>> cross_site("POST", "/v1/feedback", {"sec-fetch-site": "cross-site"})
    'Sec-Fetch-Site: cross-site'
    >>> cross_site("GET", "/v1/model", {"origin": "http://evil.example", "host": "127.0.0.1:8108"})
    'an Origin that is not this server'
    >>> same = {"sec-fetch-site": "same-origin", "origin": "https://f.example", "host": "f.example"}
    >>> cross_site("POST", "/queue/label", same), cross_site("POST", "/v1/check", {})
    (None, None)
    >>> cross_site("GET", "/queue", {"sec-fetch-site": "cross-site"}) is None  # a link followed
    True
    """
    if method in SAFE_METHODS and not path.startswith("/v1/"):
        return None
    site = headers.get("sec-fetch-site")
    if site in ("cross-site", "same-site"):
        return f"Sec-Fetch-Site: {site}"
    origin = headers.get("origin")
    if origin is not None and _authority(origin) != _host(headers.get("host")):
        return "an Origin that is not this server"
    return None


def _authority(origin: str) -> tuple[str, int | None] | None:
    """An Origin's host and port, the scheme's default port as none ("null": None)."""
    scheme, sep, rest = origin.partition("://")
    parsed = parse_host(rest) if sep else None
    if parsed is None:
        return None
    name, port = parsed
    return name, None if port == DEFAULT_PORTS.get(scheme.lower()) else port


def _host(host: str | None) -> tuple[str, int | None] | None:
    """A Host header's host and port, 80 and 443 as none: a TLS proxy in front serves the page
    over https while this server is spoken to over http."""
    parsed = parse_host(host) if host else None
    if parsed is None:
        return None
    name, port = parsed
    return name, None if port in (80, 443) else port


class RequestGuard:
    """ASGI middleware: the refusals above, answered by `refuse` (JSON for the API, a page for
    the workbench); any other request goes on to `app`."""

    def __init__(
        self, app: ASGIApp, hosts: AllowedHosts, refuse: Callable[[Request, Problem], Response]
    ) -> None:
        self.app, self.hosts, self.refuse = app, hosts, refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = self.problem(scope)
            if problem is not None:
                await self.refuse(Request(scope, receive), problem)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def problem(self, scope: Scope) -> Problem | None:
        headers = Headers(scope=scope)
        if not self.hosts.allows(headers.get("host"), scope.get("scheme", "http")):
            return Problem(
                400,
                "the Host header names no host of this server "
                "(docs/operations.md: http.allowed_hosts)",
            )
        why = cross_site(scope["method"], scope["path"], headers)
        if why is not None:
            return Problem(403, f"refused: a browser's request made by another site's page ({why})")
        return None
