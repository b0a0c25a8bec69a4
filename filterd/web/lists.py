"""GET, POST /v1/lists and DELETE /v1/lists/{key}/{value}: the allow, block and review lists
per entity (`filterd.entities.lists`, kept by `filterd.store.lists`), as `filterd lists` manages
them: every change on the lists' log with the analyst of the credential, read by every scorer
within seconds."""

from __future__ import annotations

from datetime import UTC, datetime

from filterd.entities.lists import ListEntry
from filterd.web.api import ListedEntity, ListRequest, ListsPage
from filterd.web.context import WebContext
from filterd.web.errors import Problem, decode_body


def lists_page(context: WebContext) -> ListsPage:
    now = datetime.now(UTC)
    return ListsPage(entries=[listed(e, now) for e in context.model.list_entries()])


def put_on_list(context: WebContext, body: bytes, analyst: str) -> ListedEntity:
    """The entry of `body` put on its list by `analyst`, or a Problem: 400 not JSON, 422 a
    field that does not validate (an expiry without a time zone, or already past)."""
    return put_entry(context, decode_body(body, ListRequest), analyst)


def put_entry(context: WebContext, request: ListRequest, analyst: str) -> ListedEntity:
    """`put_on_list` of a request already decoded (the workbench's form)."""
    now = datetime.now(UTC)
    expires = request.expires_at
    if expires is not None and (expires.tzinfo is None or expires <= now):
        raise Problem(422, "a time to come, with its time zone", "$.expires_at")
    entry = ListEntry(request.key, request.value, request.outcome, expires, request.reason, analyst)
    context.model.put_on_list(entry, now)
    return listed(entry, now)


def remove_from_list(context: WebContext, key: str, value: str, analyst: str) -> ListedEntity:
    """The entry taken off its list by `analyst`, or a 404 Problem if the entity is on none."""
    removed = context.model.remove_from_list(key, value, analyst)
    if removed is None:
        raise Problem(404, "the entity is on no list")
    return listed(removed, datetime.now(UTC))


def listed(entry: ListEntry, now: datetime) -> ListedEntity:
    return ListedEntity(
        key=entry.key,
        value=entry.value,
        outcome=entry.outcome,
        expires_at=entry.expires_at,
        reason=entry.reason,
        created_by=entry.created_by,
        active=entry.active(now),
    )
