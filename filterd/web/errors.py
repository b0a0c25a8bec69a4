"""Errors as the HTTP API answers them: a status and an `ApiError` body naming the field.

Handlers raise `Problem`; the app turns it, and Starlette's own HTTP errors (404, 405), into
JSON. A msgspec validation error names the path of the field it is about ("… - at `$.id`"):
`invalid` moves that path into `field`, so a client can point at it. Any other exception is a
fault of filterd's: `Faults` answers it with a 500 and logs it once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.typing import FilteringBoundLogger

from filterd.web.api import ApiError

_AT = re.compile(r"^(?P<error>.*) - at `(?P<field>[^`]*)`$", re.DOTALL)
_NAMED = re.compile(r"^Object (?:missing required|contains unknown) field `(?P<name>[^`]*)`$")


class Problem(Exception):
    """An answer other than success: `status`, what is wrong, and the field it is about."""

    def __init__(
        self,
        status: int,
        error: str,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(error)
        self.status, self.error, self.field, self.headers = status, error, field, headers


def invalid(error: msgspec.ValidationError, status: int = 422) -> Problem:
    """The Problem of a msgspec validation error, its path in `field`; a missing or unknown
    field is named itself, not the object that lacks or has it.

    >>> p = invalid(msgspec.ValidationError("Expected `str`, got `int` - at `$[0].id`"))
    >>> p.status, p.error, p.field
    (422, 'Expected `str`, got `int`', '$[0].id')
    >>> invalid(msgspec.ValidationError("Object missing required field `id`")).field
    '$.id'
    """
    found = _AT.match(str(error))
    message, path = (found["error"], found["field"]) if found else (str(error), None)
    named = _NAMED.match(message)
    if named is not None:
        return Problem(status, message, f"{path or '$'}.{named['name']}")
    return Problem(status, message, path)


T = TypeVar("T")


def decode_body(body: bytes, kind: type[T] | Any) -> T:
    """`body` decoded and validated as `kind` (a struct, or a union of them), or a Problem:
    400 not JSON (msgspec names where it stopped reading), not UTF-8, or nested too deeply;
    422 a field that does not validate."""
    try:
        decoded: T = msgspec.json.decode(body, type=kind)
    except msgspec.ValidationError as error:
        raise invalid(error) from None
    except msgspec.DecodeError as error:
        raise Problem(400, f"the body is not valid JSON: {error}") from None
    except UnicodeDecodeError:
        raise Problem(400, "the body is not UTF-8") from None
    except RecursionError:
        raise Problem(400, "the body is nested too deeply") from None
    return decoded


# on every answer of the API: no browser guesses its type, no cache keeps it
API_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


def json_response(
    body: msgspec.Struct, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """`body` encoded as JSON, with `API_HEADERS`."""
    return Response(
        msgspec.json.encode(body),
        status,
        {**API_HEADERS, **(headers or {})},
        media_type="application/json",
    )


def problem_response(problem: Problem) -> Response:
    """The JSON answer of `problem`."""
    return json_response(
        ApiError(error=problem.error, field=problem.field), problem.status, problem.headers
    )


class Faults:
    """ASGI middleware: an exception no handler took is answered with a 500 (as `answer` renders
    a Problem) and logged once, with its traceback ("http: request failed"). Starlette's own
    last-resort handler would pass it on to the server, which logs it a second time."""

    def __init__(
        self,
        app: ASGIApp,
        log: FilteringBoundLogger,
        answer: Callable[[Request, Problem], Response],
    ) -> None:
        self.app, self.log, self.answer = app, log, answer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as error:
            self.log.error("http: request failed", error=repr(error), exc_info=error)
            if not started:  # else the server ends the connection: the answer is cut short
                response = self.answer(Request(scope), Problem(500, "internal error (logged)"))
                await response(scope, receive, send)
