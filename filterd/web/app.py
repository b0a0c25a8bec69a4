"""The HTTP API and the workbench as one Starlette ASGI app: `create_app(context)`.

    POST /v1/check             decide on messages (filterd.web.check)
    POST /v1/feedback          send a label as the authenticated analyst (filterd.web.feedback)
    GET  /v1/decisions/{id}    GET /v1/review    GET /v1/model     (filterd.web.reads)
    GET, POST /v1/lists        DELETE /v1/lists/{key}/{value}     (filterd.web.lists)
    GET, POST /v1/rules        DELETE /v1/rules/{name}            (filterd.web.rules)
    GET  /v1/openapi.json      the OpenAPI document (filterd.web.openapi), without credentials
    /, /login, /queue, /messages/…, /model, /audit, /static/…   the workbench (filterd.web.pages)

Every endpoint but the OpenAPI document requires a credential (`filterd.web.auth`): 401
otherwise (a challenge no browser answers with a login prompt, so that no browser keeps an
analyst's password for other sites' pages to use); the workbench's pages a login session. The
bodies of POST /v1/check and /v1/feedback are `application/json` (415 otherwise: no HTML form
can send that type). Before any of it, `filterd.web.guard` refuses a Host not this server's
and a browser's request from another site's page. Every error of the API is JSON naming the
field it is about (`filterd.web.errors`), the workbench's a page; bad input is a 4xx, never a
500; a store that cannot be reached is a 503. Work that can take long runs in Starlette's thread
pool, off the event loop: a credential's slow hash, SQL, pages, checks over `check.INLINE_BYTES`;
a remembered credential and a small check are answered on the loop, where a thread-pool hop
would cost more than the work. Labels are published by a thread of their own, within
`http.publish_seconds` (`filterd.web.labels`): a stalled broker holds no thread of the pool.
Each request is logged with its method, path, status, duration and analyst — never a header, a
body or a query string.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.typing import FilteringBoundLogger

from filterd.observe.metrics import Metrics
from filterd.service.hosts import AllowedHosts
from filterd.store.errors import StoreError, UnknownModel, ValueRefused
from filterd.web import check, feedback, forgetting, lists, openapi, pages, reads, rules
from filterd.web.auth import REALM, client_address
from filterd.web.body import read_body
from filterd.web.context import WebContext
from filterd.web.errors import API_HEADERS, Faults, Problem, json_response, problem_response
from filterd.web.guard import RequestGuard
from filterd.web.ids import entity_text, path_id
from filterd.web.sessions import Sessions

Handler = Callable[[Request], Awaitable[Response]]


def create_app(context: WebContext) -> Starlette:
    """The API's app over `context`."""
    max_bytes = context.config.limits.max_bytes

    async def analyst_of(request: Request) -> str:
        """The authenticated analyst, or a 401 Problem (slow hashing runs off the event loop)."""
        header = request.headers.get("authorization")
        # a header verified before is a keyed digest and a look-up away: answered here, without
        # a hop to the thread pool and back; only a header not remembered needs the slow hash
        analyst = context.auth.remembered(header)
        if analyst is None and header:
            # Throttled (429) or Busy (503) when the header was not checked
            analyst = await run_in_threadpool(
                context.auth.identify, header, client_address(request)
            )
        if analyst is None:
            raise Problem(
                401,
                "authentication required: an API token (Bearer) or a user's password (Basic)",
                headers={"WWW-Authenticate": REALM},
            )
        request.state.analyst = analyst  # for the request log
        return analyst

    async def json_body(request: Request) -> bytes:
        """The body of a request that changes or decides something: JSON only, or a 415 Problem
        (a form from another site's page cannot send it without the browser asking first)."""
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise Problem(415, "the body must be JSON, sent as Content-Type: application/json")
        return await read_body(request, max_bytes)

    async def post_check(request: Request) -> Response:
        await analyst_of(request)
        body = await json_body(request)
        if len(body) <= check.INLINE_BYTES:
            # a small check costs less CPU than the thread switches of a hop to the pool and
            # back, and waits for no other thread to be scheduled: decided here
            return json_response(check.check(context, body))
        return json_response(await run_in_threadpool(check.check, context, body))

    async def post_feedback(request: Request) -> Response:
        analyst = await analyst_of(request)
        body = await json_body(request)
        sent = await feedback.send_feedback(context, body, analyst)
        return json_response(sent, 202)

    async def post_forget(request: Request) -> Response:
        analyst = await analyst_of(request)
        body = await json_body(request)
        done = await run_in_threadpool(forgetting.forget_labels, context, body, analyst)
        return json_response(done)

    async def get_decision(request: Request) -> Response:
        await analyst_of(request)
        message_id = path_id(request.path_params, request.query_params)
        return json_response(await run_in_threadpool(reads.decision_info, context, message_id))

    async def get_review(request: Request) -> Response:
        await analyst_of(request)
        query = reads.review_query(request.query_params)
        return json_response(await run_in_threadpool(reads.review_page, context, query))

    async def get_model(request: Request) -> Response:
        await analyst_of(request)
        return json_response(await run_in_threadpool(reads.model_info, context))

    async def get_lists(request: Request) -> Response:
        await analyst_of(request)
        return json_response(await run_in_threadpool(lists.lists_page, context))

    async def post_lists(request: Request) -> Response:
        analyst = await analyst_of(request)
        body = await json_body(request)
        entry = await run_in_threadpool(lists.put_on_list, context, body, analyst)
        return json_response(entry, 201)

    async def delete_listed(request: Request) -> Response:
        analyst = await analyst_of(request)
        key, value = (entity_text(request.path_params, name) for name in ("key", "value"))
        removed = await run_in_threadpool(lists.remove_from_list, context, key, value, analyst)
        return json_response(removed)

    async def get_rules(request: Request) -> Response:
        await analyst_of(request)
        return json_response(await run_in_threadpool(rules.rules_page, context))

    async def post_rules(request: Request) -> Response:
        analyst = await analyst_of(request)
        body = await json_body(request)
        added = await run_in_threadpool(rules.add_rule, context, body, analyst)
        return json_response(added, 201)

    async def delete_rule(request: Request) -> Response:
        analyst = await analyst_of(request)
        name = rules.rule_name(request.path_params)
        removed = await run_in_threadpool(rules.remove_rule, context, name, analyst)
        return json_response(removed)

    async def get_openapi(_request: Request) -> Response:
        document = msgspec.json.encode(openapi.document())
        return Response(document, headers=API_HEADERS, media_type="application/json")

    routes: list[BaseRoute] = [
        Route("/v1/check", post_check, methods=["POST"]),
        Route("/v1/feedback", post_feedback, methods=["POST"]),
        Route("/v1/forget", post_forget, methods=["POST"]),
        Route("/v1/decisions/{id:path}", get_decision, methods=["GET"]),
        Route("/v1/review", get_review, methods=["GET"]),
        Route("/v1/model", get_model, methods=["GET"]),
        Route("/v1/lists", get_lists, methods=["GET"]),
        Route("/v1/lists", post_lists, methods=["POST"]),
        Route("/v1/lists/{key}/{value:path}", delete_listed, methods=["DELETE"]),
        Route("/v1/rules", get_rules, methods=["GET"]),
        Route("/v1/rules", post_rules, methods=["POST"]),
        Route("/v1/rules/{name:path}", delete_rule, methods=["DELETE"]),
        Route("/v1/openapi.json", get_openapi, methods=["GET"]),
    ]
    http = context.config.http
    env = pages.templates()
    sessions = Sessions.configured(http.session_secret, http.session_hours, context.auth.binding)
    routes += pages.page_routes(context, sessions, env)
    log = context.log

    def answer(request: Request, problem: Problem) -> Response:
        """JSON for the API, a page for the workbench."""
        if request.url.path.startswith("/v1/"):
            return problem_response(problem)
        return pages.error_page(env, problem)

    async def on_problem(request: Request, error: Exception) -> Response:
        assert isinstance(error, Problem)
        return answer(request, error)

    async def on_http(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)  # Starlette's: an unknown path, a wrong method
        return answer(
            request, Problem(error.status_code, error.detail, None, dict(error.headers or {}))
        )

    async def on_store(request: Request, error: Exception) -> Response:
        if isinstance(error, UnknownModel):  # deleted (`filterd model delete`) while served
            return answer(request, Problem(503, str(error)))
        if isinstance(error, ValueRefused):  # our fault, not an outage
            raise error
        assert isinstance(error, StoreError)
        detail = str(error)
        log.warning("http: store unavailable", error=detail)
        return answer(request, Problem(503, f"the store is not available: {detail}"))

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        Problem: on_problem,
        HTTPException: on_http,
        StoreError: on_store,
        UnknownModel: on_store,
    }
    app = Starlette(routes=routes, exception_handlers=handlers)
    hosts = AllowedHosts.of(http.allowed_hosts, http.host, http.port)
    # added first, so inside the log: its refusals are logged and counted too
    app.add_middleware(RequestGuard, hosts=hosts, refuse=answer)
    app.add_middleware(Faults, log=log, answer=answer)  # a fault of filterd's: 500, logged once
    # counted by the routes of the app's one table: the labels cannot miss one
    app.add_middleware(RequestLog, log=log, routes=routes, metrics=context.metrics)
    return app


OTHER = "other"  # the label of a request no route answers
_CONVERTER = re.compile(r":[^}]*")  # of a path parameter: "{id:path}" → "{id}"


class RouteLabels:
    """The route a request is counted under, from the app's own route table (`create_app`):
    the first route whose path matches, as the router tries them, named by its path without
    its parameters' converters ("/v1/decisions/{id}"; a mount by its prefix, "/static"), else
    OTHER. A bounded set of labels (`labels`), whatever is asked for; refused requests (a Host
    not this server's, another site's page) are counted under the route they asked for.

    >>> labels = RouteLabels([Route("/", None), Route("/messages/{id:path}/label", None),
    ...                       Route("/messages/{id:path}", None), Mount("/static", routes=[])])
    >>> labels("/"), labels("/messages/m-1/label"), labels("/messages/m-1"), labels("/admin")
    ('/', '/messages/{id}/label', '/messages/{id}', 'other')
    >>> labels("/static/x.js"), sorted(labels.labels)[:2]
    ('/static', ['/', '/messages/{id}'])
    """

    def __init__(self, routes: Sequence[BaseRoute]) -> None:
        self._routes = [
            (route.path_regex, _CONVERTER.sub("", route.path))
            for route in routes
            if isinstance(route, (Route, Mount))
        ]
        self.labels = frozenset(label for _, label in self._routes) | {OTHER}

    def __call__(self, path: str) -> str:
        for pattern, label in self._routes:
            if pattern.match(path):
                return label
        return OTHER


class RequestLog:
    """ASGI middleware: one log line per request ("http request"): method, path, status,
    milliseconds, and the analyst once authenticated. Nothing else of the request: headers
    carry credentials, bodies and query strings carry message content. With `metrics`, each
    request is counted and timed by its route in `routes`, the app's (`RouteLabels`), and
    status."""

    def __init__(
        self,
        app: ASGIApp,
        log: FilteringBoundLogger,
        routes: Sequence[BaseRoute],
        metrics: Metrics | None = None,
    ) -> None:
        self.app, self.log, self.metrics = app, log, metrics
        self.route_of = RouteLabels(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # if the app fails before answering

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            seconds = time.perf_counter() - started
            state = scope.get("state") or {}
            self.log.info(
                "http request",
                method=scope["method"],
                path=scope["path"],
                status=status,
                ms=round(1000 * seconds, 1),
                analyst=state.get("analyst"),
            )
            if self.metrics is not None:
                route = self.route_of(scope["path"])
                self.metrics.http_requests.labels(route, str(status)).inc()
                self.metrics.http_seconds.labels(route).observe(seconds)
