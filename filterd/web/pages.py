"""The analysts' workbench: server-rendered pages beside the API (`page_routes`).

    GET  /login  POST /login  POST /logout       a session from a configured user or token
    GET  /queue                                  the review queue, filtered (`ReviewQuery`)
    POST /queue/label                            one label for the selected items
    GET  /messages/{id}   POST /messages/{id}/label    (the id escaped: `ids.message_url`)
    GET  /model   GET /model/preview   POST /model/calibrate
    GET  /audit   POST /audit/forget             label events by analyst and message; an
                                                 analyst's or a sender's labels forgotten
    GET  /entity?key=K&value=V   POST /entity/label   an entity's messages, velocity, list
    GET  /rules   POST /rules, /rules/remove, /rules/lists, /rules/lists/remove
                                                 the lists and rules beside the model
    GET  /static/…                               htmx, the style sheet and the shortcuts

Every page needs a session (`filterd.web.sessions`): a request without one is sent to the login
page (a GET) or refused with 401 (a POST). Every POST carries its session's CSRF token (the
`csrf` field, or the `X-CSRF-Token` header that htmx sends), else 403. Labels go to the
feedback topic as the session's analyst (`feedback.publish_labels`), as the API's do. Pages are
rendered with Jinja2, autoescaped, what senders wrote through the `visible` filter (invisible
characters shown: `filterd.web.visible`); the answers forbid framing and scripts from elsewhere.
"""

from __future__ import annotations

import secrets
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar

import jinja2
import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from filterd.service.config import parse_duration
from filterd.store.forgetting import Selector
from filterd.web import forgetting, lists, rules, views
from filterd.web.api import MAX_OFFSET, FeedbackRequest, ListRequest, ReviewQuery, RuleRequest
from filterd.web.auth import client_address
from filterd.web.body import read_body
from filterd.web.context import WebContext
from filterd.web.errors import Problem, invalid
from filterd.web.feedback import publish_labels
from filterd.web.ids import checked_id, entity_text, message_url, path_id
from filterd.web.reads import review_query
from filterd.web.sessions import LOGIN_COOKIE, SESSION_COOKIE, Session, Sessions, cookie_name, same
from filterd.web.views import template_values
from filterd.web.visible import shown, visible

FORM_BYTES = 64 * 1024  # a form's body, at most: labels and comments, not messages
FORM_FIELDS = 1000  # fields in one form, at most (a bulk label of a whole page is 500)
HEADERS = {
    # scripts and styles from this server only (the SVG charts are inline markup, not scripts);
    # inline style attributes draw the contribution bars
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; "
    "form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

Handler = Callable[[Request], Awaitable[Response]]
T = TypeVar("T")


def templates() -> jinja2.Environment:
    """The pages' templates (package data), autoescaped, with the filters they use."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("filterd.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(when=when, num=num, pct=pct, visible=visible, shown=shown)
    env.globals.update(query_string=query_string, message_url=message_url)
    return env


def when(moment: datetime | None) -> str:
    """A time as the pages show it: UTC to the second.

    >>> when(datetime(2026, 11, 26, 13, 5, 7, 123, tzinfo=UTC))
    '2026-11-26 13:05:07'
    """
    return "—" if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def num(value: float | None, digits: int = 3) -> str:
    """A number to `digits` places, "—" for none.

    >>> num(0.12345), num(None), num(-2.5, 1)
    ('0.123', '—', '-2.5')
    """
    return "—" if value is None else f"{value:.{digits}f}"


def pct(value: float | None, digits: int = 2) -> str:
    """A rate in percent, "—" for none.

    >>> pct(0.99123)
    '99.12 %'
    """
    return "—" if value is None else f"{100 * value:.{digits}f} %"


def query_string(query: ReviewQuery, **changes: Any) -> str:
    """`query` as a URL's query string, defaults left out, with `changes` applied.

    >>> query_string(ReviewQuery(label="spam"), offset=50)
    'label=spam&offset=50'
    """
    default = msgspec.to_builtins(ReviewQuery())
    values = {**msgspec.to_builtins(query), **changes}
    kept = {k: v for k, v in values.items() if v is not None and v != default.get(k)}
    return urllib.parse.urlencode(
        {k: str(v).lower() if isinstance(v, bool) else v for k, v in kept.items()}
    )


def parse_query(params: Mapping[str, str]) -> ReviewQuery:
    """A queue's filters from a page's query string (empty fields are unset; a time without
    seconds or zone, as a browser's datetime-local input sends it, is UTC), or a 422 Problem
    naming the parameter."""
    values = {k: v for k, v in params.items() if k in ReviewQuery.__struct_fields__ and v != ""}
    for key in ("since", "until"):
        if key in values and len(values[key]) == len("2026-11-26T13:05"):
            values[key] += ":00"
    query = review_query(values)  # as GET /v1/review reads its parameters
    for key in ("since", "until"):
        moment = getattr(query, key)
        if moment is not None and moment.tzinfo is None:
            query = msgspec.structs.replace(query, **{key: moment.replace(tzinfo=UTC)})
    return query


def safe_next(target: str | None, default: str = "/queue") -> str:
    """`target` if it is a path on this server, else `default`: no redirect leaves the site.

    >>> safe_next("/messages/m-1?offset=3"), safe_next("//evil.example/"), safe_next("https://x")
    ('/messages/m-1?offset=3', '/queue', '/queue')
    """
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return default
    if any(ord(ch) < 32 or ch == "\\" for ch in target):
        return default
    return target


def parse_form(body: bytes) -> dict[str, list[str]]:
    """An `application/x-www-form-urlencoded` body's fields, or a 400 Problem."""
    try:
        text = body.decode("utf-8")
        return urllib.parse.parse_qs(text, keep_blank_values=True, max_num_fields=FORM_FIELDS)
    except (UnicodeDecodeError, ValueError) as error:
        raise Problem(400, f"a form the workbench cannot read: {error}") from None


def error_page(env: jinja2.Environment, problem: Problem) -> Response:
    """A Problem as a page (the API answers the same Problems as JSON)."""
    text = env.get_template("error.html").render(
        status=problem.status, error=problem.error, field=problem.field
    )
    return HTMLResponse(text, problem.status, headers={**HEADERS, **(problem.headers or {})})


def page_routes(
    context: WebContext, sessions: Sessions, env: jinja2.Environment
) -> list[BaseRoute]:
    """The workbench's routes over `context`, its sessions signed by `sessions`, its pages
    rendered from `env` (`templates()`)."""
    config = context.config

    def render(name: str, status: int = 200, **values: Any) -> Response:
        common = {"labels": list(config.model.labels), "model_name": config.model.name}
        text = env.get_template(name).render({**common, **values})
        return HTMLResponse(text, status, headers=HEADERS)

    def session_of(request: Request) -> Session | None:
        session = sessions.read(request.cookies.get(cookie_of(request, SESSION_COOKIE)))
        if session is not None:
            request.state.analyst = session.analyst  # for the request log
        return session

    def page(name: str, build: Callable[[Request, Session], dict[str, Any]]) -> Handler:
        """A GET handler: the session's page `name` with the values `build` reads (in the
        thread pool), or the login page for a request without a session."""

        def build_and_render(request: Request, session: Session) -> Response:
            values = build(request, session)
            return render(name, **values, analyst=session.analyst, csrf=session.csrf)

        async def handler(request: Request) -> Response:
            session = session_of(request)
            if session is None:
                login = "/login?" + urllib.parse.urlencode({"next": here(request)})
                return RedirectResponse(login, 303, headers=HEADERS)
            # rendering a long page takes milliseconds too: off the loop, which answers checks
            return await run_in_threadpool(build_and_render, request, session)

        return handler

    async def form_of(request: Request) -> tuple[Session, dict[str, list[str]]]:
        """A POST's session and form, or a Problem: 401 no session, 403 a wrong CSRF token,
        413 too big, 415 not a form."""
        session = session_of(request)
        if session is None:
            raise Problem(401, "log in first: this session has ended")
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            raise Problem(415, "the workbench takes forms (application/x-www-form-urlencoded)")
        body = await read_body(request, FORM_BYTES, "the form limit")
        form = parse_form(body)
        token = request.headers.get("x-csrf-token") or first(form, "csrf")
        if not sessions.csrf_ok(session, token):
            raise Problem(
                403,
                "the form's CSRF token is missing or not this session's: "
                "reload the page and try again",
            )
        return session, form

    # --- login -----------------------------------------------------------------------------

    async def get_login(request: Request, error: str | None = None, status: int = 200) -> Response:
        token = secrets.token_urlsafe(24)
        response = render(
            "login.html",
            status,
            csrf=token,
            error=error,
            next=safe_next(request.query_params.get("next")),
        )
        https = request.url.scheme == "https"
        response.set_cookie(
            cookie_name(LOGIN_COOKIE, https),
            token,
            max_age=3600,
            httponly=True,
            samesite="strict",
            secure=https,
        )
        return response

    async def post_login(request: Request) -> Response:
        body = await read_body(request, FORM_BYTES, "the form limit")
        form = parse_form(body)
        cookie, token = request.cookies.get(cookie_of(request, LOGIN_COOKIE)), first(form, "csrf")
        if not cookie or not token or not same(cookie, token):
            return await get_login(request, "the login form expired: try again", 403)
        name, secret = first(form, "name") or "", first(form, "password") or ""
        try:
            analyst = await run_in_threadpool(
                context.auth.login, name, secret, client_address(request)
            )
        except Problem as refused:  # throttled (429) or busy (503): not checked
            response = await get_login(request, refused.error, refused.status)
            response.headers.update(refused.headers or {})
            return response
        if analyst is None:
            return await get_login(request, "wrong name or password (or token)", 401)
        target = safe_next(first(form, "next"))
        response = RedirectResponse(target, 303, headers=HEADERS)
        https = request.url.scheme == "https"
        response.set_cookie(
            cookie_name(SESSION_COOKIE, https),
            sessions.issue(analyst),
            max_age=int(sessions.seconds),
            httponly=True,
            samesite="strict",
            secure=https,
        )
        response.delete_cookie(
            cookie_name(LOGIN_COOKIE, https), httponly=True, samesite="strict", secure=https
        )
        context.log.info("workbench login", analyst=analyst)
        return response

    async def post_logout(request: Request) -> Response:
        session, _ = await form_of(request)
        sessions.revoke(session)  # a copy of the cookie kept elsewhere is refused from now on
        response = RedirectResponse("/login", 303, headers=HEADERS)
        https = request.url.scheme == "https"
        response.delete_cookie(
            cookie_name(SESSION_COOKIE, https), httponly=True, samesite="strict", secure=https
        )
        context.log.info("workbench logout", analyst=session.analyst)
        return response

    # --- the queue and messages ------------------------------------------------------------

    def queue_values(request: Request, _session: Session) -> dict[str, Any]:
        query = parse_query(request.query_params)
        return template_values(views.queue_view(context, query)) | {
            "shortcuts": views.shortcuts(config.model.labels),
            "here": here(request),
        }

    def message_values(request: Request, _session: Session) -> dict[str, Any]:
        message_id = path_id(request.path_params, request.query_params)
        query = parse_query(request.query_params)
        position = position_of(request.query_params.get("position"))
        view = views.message_view(context, message_id, query, position)
        entity_keys = set(config.entities.keys)  # attributes that link to their entity's page
        return template_values(view) | {
            "query": query,
            "here": here(request),
            "entity_keys": entity_keys,
        }

    async def post_label(request: Request) -> Response:
        session, form = await form_of(request)
        message_id = path_id(request.path_params, request.query_params)
        await send_labels(session, [message_id], form)
        if request.headers.get("hx-request"):
            return Response(b"", 200, headers=HEADERS)  # the row is swapped out
        target = safe_next(first(form, "next"), message_url(message_id))
        return RedirectResponse(target, 303, headers=HEADERS)

    async def post_bulk(request: Request) -> Response:
        session, form = await form_of(request)
        ids = form.get("message_id", [])
        if not ids:
            raise Problem(422, "select at least one item", "message_id")
        await send_labels(session, ids, form)
        return RedirectResponse(safe_next(first(form, "next")), 303, headers=HEADERS)

    async def send_labels(session: Session, ids: list[str], form: dict[str, list[str]]) -> None:
        label, comment = first(form, "label"), first(form, "comment") or None
        if not label:
            raise Problem(422, "choose a label", "label")
        requests = [
            convert({"message_id": m, "label": label, "comment": comment}, FeedbackRequest)
            for m in ids
        ]
        await publish_labels(context, requests, session.analyst)

    # --- the model, calibration and the audit trail ----------------------------------------

    def model_values(request: Request, _session: Session) -> dict[str, Any]:
        view = views.model_view(context)
        # the preview re-reads and scores the calibration window: only when asked for
        raw = request.query_params.get("target_recall")
        target = target_of(raw, view.target_recall)
        preview = None if raw is None else views.calibrate(context, target, None)
        return template_values(view) | {"preview": preview, "applied": None}

    def preview_values(request: Request, _session: Session) -> dict[str, Any]:
        target = target_of(request.query_params.get("target_recall"), config.decision.target_recall)
        return {"preview": views.calibrate(context, target, None)}

    async def post_calibrate(request: Request) -> Response:
        session, form = await form_of(request)
        target = target_of(first(form, "target_recall"), config.decision.target_recall)
        applied = await run_in_threadpool(views.calibrate, context, target, session.analyst)
        if applied.report is not None:
            context.log.info(
                "workbench calibration",
                analyst=session.analyst,
                version=applied.report.version,
                tau=applied.report.tau,
                target_recall=target,
            )

        def model_page() -> Response:
            return render(
                "model.html",
                200 if applied.refused is None else 409,
                **template_values(views.model_view(context)),
                preview=applied,
                applied=applied,
                analyst=session.analyst,
                csrf=session.csrf,
            )

        return await run_in_threadpool(model_page)

    def audit_values(request: Request, _session: Session) -> dict[str, Any]:
        params = request.query_params
        analyst, sender = _forget_criteria(params.get("analyst"), params.get("sender"))
        raw_id = params.get("message_id")
        message_id = checked_id(raw_id, "message_id") if raw_id else None
        events = views.audit_view(context, analyst, message_id, None)
        # the labels in force of an analyst or a sender, which the page offers to forget
        # (counted, not forgotten)
        labels = None
        if analyst is not None or sender is not None:
            labels = forgetting.labels_of(context, Selector(analyst=analyst, sender=sender))
        return {
            "events": events,
            "filter_analyst": analyst or "",
            "filter_sender": sender or "",
            "filter_message": message_id or "",
            "labels_in_force": labels,
        }

    async def post_forget(request: Request) -> Response:
        session, form = await form_of(request)
        analyst, sender = _forget_criteria(first(form, "analyst"), first(form, "sender"))
        if analyst is None and sender is None:
            raise Problem(422, "say whose labels to forget: an analyst or a sender", "analyst")
        selector = Selector(analyst=analyst, sender=sender)
        await run_in_threadpool(forgetting.forget_selected, context, selector, session.analyst)
        given = {"analyst": analyst, "sender": sender}
        query = urllib.parse.urlencode({k: v for k, v in given.items() if v is not None})
        return RedirectResponse(f"/audit?{query}", 303, headers=HEADERS)

    # --- lists and rules -------------------------------------------------------------------

    def rules_values(_request: Request, _session: Session) -> dict[str, Any]:
        return template_values(views.rules_view(context))

    async def post_entry(request: Request) -> Response:
        session, form = await form_of(request)
        fields = {k: first(form, k) for k in ("key", "value", "outcome", "reason")}
        duration = first(form, "for")
        if duration:
            try:
                fields["expires_at"] = (datetime.now(UTC) + parse_duration(duration)).isoformat()
            except ValueError as error:
                raise Problem(422, str(error), "for") from None
        entry = convert({k: v for k, v in fields.items() if v}, ListRequest)
        await run_in_threadpool(lists.put_entry, context, entry, session.analyst)
        return RedirectResponse(safe_next(first(form, "next"), "/rules"), 303, headers=HEADERS)

    async def post_entry_removal(request: Request) -> Response:
        session, form = await form_of(request)
        key, value = (entity_text({k: first(form, k) or ""}, k) for k in ("key", "value"))
        await run_in_threadpool(lists.remove_from_list, context, key, value, session.analyst)
        return RedirectResponse("/rules", 303, headers=HEADERS)

    async def post_rule(request: Request) -> Response:
        session, form = await form_of(request)
        fields = {k: first(form, k) for k in ("name", "when", "outcome", "reason")}
        rule = convert({k: v for k, v in fields.items() if v}, RuleRequest)
        await run_in_threadpool(rules.add, context, rule, session.analyst)
        return RedirectResponse("/rules", 303, headers=HEADERS)

    async def post_rule_removal(request: Request) -> Response:
        session, form = await form_of(request)
        name = rules.rule_name({"name": first(form, "name") or ""})
        await run_in_threadpool(rules.remove_rule, context, name, session.analyst)
        return RedirectResponse("/rules", 303, headers=HEADERS)

    # --- an entity ------------------------------------------------------------------------

    def entity_values(request: Request, _session: Session) -> dict[str, Any]:
        params = request.query_params
        key, value = (entity_text({k: params.get(k, "")}, k) for k in ("key", "value"))
        return template_values(views.entity_view(context, key, value)) | {"here": here(request)}

    async def post_entity_label(request: Request) -> Response:
        """One label for each of the entity's newest messages (those its page shows)."""
        session, form = await form_of(request)
        key, value = (entity_text({k: first(form, k) or ""}, k) for k in ("key", "value"))
        found = await run_in_threadpool(
            context.model.entity_messages, key, value, views.ENTITY_MESSAGES
        )
        if not found:
            raise Problem(404, "no message of this entity is in the store")
        await send_labels(session, [m.message_id for m in found], form)
        target = "/entity?" + urllib.parse.urlencode({"key": key, "value": value})
        return RedirectResponse(target, 303, headers=HEADERS)

    async def home(_request: Request) -> Response:
        return RedirectResponse("/queue", 303, headers=HEADERS)

    static = Path(str(files("filterd.web") / "static"))
    return [
        Route("/", home, methods=["GET"]),
        Route("/login", get_login, methods=["GET"]),
        Route("/login", post_login, methods=["POST"]),
        Route("/logout", post_logout, methods=["POST"]),
        Route("/queue", page("queue.html", queue_values), methods=["GET"]),
        Route("/queue/label", post_bulk, methods=["POST"]),
        Route("/messages/{id:path}/label", post_label, methods=["POST"]),
        Route("/messages/{id:path}", page("message.html", message_values), methods=["GET"]),
        Route("/model", page("model.html", model_values), methods=["GET"]),
        Route("/model/preview", page("_preview.html", preview_values), methods=["GET"]),
        Route("/model/calibrate", post_calibrate, methods=["POST"]),
        Route("/audit", page("audit.html", audit_values), methods=["GET"]),
        Route("/audit/forget", post_forget, methods=["POST"]),
        Route("/entity", page("entity.html", entity_values), methods=["GET"]),
        Route("/entity/label", post_entity_label, methods=["POST"]),
        Route("/rules", page("rules.html", rules_values), methods=["GET"]),
        Route("/rules", post_rule, methods=["POST"]),
        Route("/rules/remove", post_rule_removal, methods=["POST"]),
        Route("/rules/lists", post_entry, methods=["POST"]),
        Route("/rules/lists/remove", post_entry_removal, methods=["POST"]),
        Mount("/static", StaticFiles(directory=static), name="static"),
    ]


def convert(fields: Mapping[str, object], kind: type[T]) -> T:
    """A form's fields as the API's request `kind`, validated as its JSON body is, or a 422
    Problem naming the field."""
    try:
        return msgspec.convert(fields, kind)
    except msgspec.ValidationError as error:
        raise invalid(error) from None


def target_of(raw: str | None, default: float) -> float:
    """A recall target from a form, or a 422 Problem naming `target_recall`.

    >>> target_of("0.95", 0.99), target_of(None, 0.99)
    (0.95, 0.99)
    """
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        raise Problem(422, "a recall target is a number in (0, 1]", "target_recall")
    return value


def position_of(raw: str | None) -> int | None:
    """A message page's place in the queue (`position`): ASCII digits up to MAX_OFFSET, or a
    422 Problem naming it.

    >>> position_of("12"), position_of(None), position_of("")
    (12, None, None)
    """
    if not raw:
        return None
    digits = raw.isascii() and raw.isdigit() and len(raw) <= len(str(MAX_OFFSET))
    if not digits or int(raw) > MAX_OFFSET:
        raise Problem(422, f"a place in the queue is a whole number up to {MAX_OFFSET}", "position")
    return int(raw)


def here(request: Request) -> str:
    """The request's path as it was sent (an id's escaped `/`, `?` or `%` kept escaped) and its
    query: where to come back to."""
    raw = request.scope.get("raw_path") or request.url.path.encode()
    path = urllib.parse.quote(raw, safe="/%!$&'()*+,;=:@-._~")
    return path + (f"?{request.url.query}" if request.url.query else "")


def cookie_of(request: Request, name: str) -> str:
    """The name cookie `name` has on `request`'s scheme (`sessions.cookie_name`)."""
    return cookie_name(name, request.url.scheme == "https")


def first(form: Mapping[str, list[str]], key: str) -> str | None:
    values = form.get(key)
    return values[0] if values else None


def _forget_criteria(analyst: str | None, sender: str | None) -> tuple[str | None, str | None]:
    """(analyst, sender) of the audit page's filter or forget form, each None when empty;
    a Problem (422) for a name with NUL or over 200 characters, or a sender that is none."""
    analyst, sender = analyst or None, sender or None
    if analyst is not None and ("\x00" in analyst or len(analyst) > 200):
        raise Problem(422, "an analyst's name has no NUL and at most 200 characters", "analyst")
    if sender is not None:
        try:
            Selector(sender=sender)
        except ValueError as error:
            raise Problem(422, str(error), "sender") from None
    return analyst, sender
