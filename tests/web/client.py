"""An HTTP client for the workbench's tests: one browser's cookies, no redirects followed."""

import html
import http.client
import re
import urllib.parse
from collections.abc import Mapping, Sequence

from tests.web.conftest import PASSWORD

# a form's fields: {name: value or values} or [(name, value), ...], as urlencode takes them
Form = Mapping[str, str | Sequence[str]] | Sequence[tuple[str, str]]
Answer = tuple[int, str, http.client.HTTPMessage]  # (status, body, headers)


class Client:
    """One browser's worth of HTTP: cookies kept, redirects not followed."""

    def __init__(
        self, port: int, address: str = "127.0.0.1", headers: dict[str, str] | None = None
    ) -> None:
        """A browser at the local `address` (all of 127/8 is this machine), sending `headers`
        with every request."""
        self.cookies: dict[str, str] = {}
        self.port, self.address, self.headers = port, address, headers or {}

    def request(
        self,
        method: str,
        path: str,
        form: Form | None = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        connection = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=30, source_address=(self.address, 0)
        )
        sent = {**self.headers, **(headers or {})}
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form, doseq=True).encode()
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        connection.request(method, path, body, sent)
        response = connection.getresponse()
        text = response.read().decode()
        for header in response.headers.get_all("set-cookie") or []:
            name, _, rest = header.partition("=")
            value = rest.split(";")[0].strip('"')
            if "max-age=0" in header.lower() or "expires=thu, 01 jan 1970" in header.lower():
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = value
        connection.close()
        return response.status, text, response.headers

    def get(self, path: str) -> Answer:
        return self.request("GET", path)

    def post(self, path: str, form: Form | None, headers: dict[str, str] | None = None) -> Answer:
        return self.request("POST", path, form, headers)

    def log_in(self, name: str = "dana", password: str = PASSWORD, next: str = "/queue") -> Answer:
        """Log in through the login form, as a browser does; the answer to the form's POST."""
        _, page, _ = self.get("/login")
        return self.post(
            "/login", {"csrf": csrf_of(page), "name": name, "password": password, "next": next}
        )


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, "the page has no CSRF field"
    return found.group(1)


def as_browser_sends(href: str) -> str:
    """The path and query a browser requests for a link `href` (an absolute path, as the pages
    write them, HTML-escaped): tabs and line breaks dropped, the fragment cut, "\\" read as "/",
    and dot segments removed ("." and "..", any dot escaped as %2e), as the URL standard says."""
    url = html.unescape(href).replace("\t", "").replace("\n", "").replace("\r", "")
    url = url.split("#", 1)[0]
    path, mark, query = url.partition("?")
    segments: list[str] = []
    parts = path.replace("\\", "/").split("/")[1:]
    for i, segment in enumerate(parts):
        dots = segment.lower().replace("%2e", ".")
        last = i == len(parts) - 1
        if dots == "..":
            segments = segments[:-1]
            if last:
                segments.append("")
        elif dots == ".":
            if last:
                segments.append("")
        else:
            segments.append(segment)
    return "/" + "/".join(segments) + mark + query
