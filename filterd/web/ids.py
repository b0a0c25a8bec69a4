"""Message ids in URLs: chosen by whoever sent the message, so each one is a single escaped path
segment, never a piece of the path.

`message_url(id)` is where the workbench links a message: `/messages/` and the id escaped with
`urllib.parse.quote(id, safe="")`, so that `/`, `?`, `#`, `%`, spaces and non-ASCII letters
stay inside the segment. An id a browser would take for a dot segment ("." or "..", which it
removes with the segment before it, even escaped as %2E) is given in the query instead, after an
empty segment: `/messages/?id=..`, `/messages//label?id=..`. `path_id` reads an id back either
way, for the pages and for `GET /v1/decisions/{id}` alike.

Ids read from a URL are checked as the records' `Id` is: 1 to 256 characters, no NUL (which no
stored id can contain, and PostgreSQL cannot compare); `checked_id` refuses others with a 422
naming the parameter.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping

import msgspec

from filterd.service.records import Id
from filterd.web.api import EntityText
from filterd.web.errors import Problem

# what browsers remove as dot segments: "." and "..", any of their dots escaped as %2e
DOT_SEGMENTS = frozenset({".", ".."})


def path_segment(message_id: str) -> str:
    """`message_id` as one path segment: everything but unreserved characters escaped.

    >>> path_segment("../messages/VICTIM"), path_segment("a b?c#d%e"), path_segment("é")
    ('..%2Fmessages%2FVICTIM', 'a%20b%3Fc%23d%25e', '%C3%A9')
    """
    return urllib.parse.quote(message_id, safe="")


def message_url(message_id: str, action: str = "", query: str = "") -> str:
    """The workbench's URL of message `message_id` (`action` "label": its label form), with the
    encoded `query` (`pages.query_string`).

    >>> message_url("a/b"), message_url("a/b", "label", "position=3")
    ('/messages/a%2Fb', '/messages/a%2Fb/label?position=3')
    >>> message_url(".."), message_url("..", "label", "position=3")
    ('/messages/?id=..', '/messages//label?id=..&position=3')
    """
    tail = f"/{action}" if action else ""
    if message_id in DOT_SEGMENTS:
        id_query = urllib.parse.urlencode({"id": message_id})
        return f"/messages/{tail}?{id_query}" + (f"&{query}" if query else "")
    return f"/messages/{path_segment(message_id)}{tail}" + (f"?{query}" if query else "")


def path_id(path_params: Mapping[str, object], query: Mapping[str, str]) -> str:
    """The message id of a request: its path's `id` parameter (decoded), or, when that is empty,
    the `id` query parameter (`message_url`'s form for dot segments); a 422 Problem if it is
    not an id."""
    raw = str(path_params.get("id", ""))
    return checked_id(raw or query.get("id", ""), "id")


def checked_id(raw: str, field: str) -> str:
    """`raw` if it can be a message id (the records' `Id`), else a 422 Problem naming `field`.

    >>> checked_id("m-1", "id")
    'm-1'
    >>> checked_id("a\\x00b", "id")
    Traceback (most recent call last):
    ...
    filterd.web.errors.Problem: a message id has 1 to 256 characters and no NUL
    """
    try:
        return msgspec.convert(raw, Id)
    except msgspec.ValidationError:
        raise Problem(422, "a message id has 1 to 256 characters and no NUL", field) from None


def entity_text(path_params: Mapping[str, object], name: str) -> str:
    """The entity key or value of a request's path parameter `name` (decoded), or a 422
    Problem naming it: 1 to 200 characters, no NUL, as a list entry holds.

    >>> entity_text({"key": "customer"}, "key")
    'customer'
    >>> entity_text({"value": "x" * 201}, "value")
    Traceback (most recent call last):
    ...
    filterd.web.errors.Problem: an entity key or value has 1 to 200 characters and no NUL
    """
    try:
        return msgspec.convert(str(path_params.get(name, "")), EntityText)
    except msgspec.ValidationError:
        raise Problem(
            422, "an entity key or value has 1 to 200 characters and no NUL", name
        ) from None
