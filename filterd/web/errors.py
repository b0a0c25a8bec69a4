"""Errors as the HTTP API answers them: a status and an `ApiError` body naming the field.

Handlers raise `Problem`; the app turns it, and Starlette's own HTTP errors (404, 405), into
JSON. A msgspec validation error names the path of the field it is about ("… - at `$.id`"):
`invalid` moves that path into `field`, so a client can point at it.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec
from starlette.responses import Response

from filterd.web.api import ApiError

_AT = re.compile(r"^(?P<error>.*) - at `(?P<field>[^`]*)`$", re.DOTALL)
_NAMED = re.compile(r"^Object (?:missing required|contains unknown) field `(?P<name>[^`]*)`$")


class Problem(Exception):
    """An answer other than success: `status`, what is wrong, and the field it is about."""

    def __init__(self, status: int, error: str, field: str | None = None,
                 headers: dict[str, str] | None = None) -> None:  # fmt: skip
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


def json_response(body: msgspec.Struct, status: int = 200,
                  headers: dict[str, str] | None = None) -> Response:  # fmt: skip
    """`body` encoded as JSON, with `API_HEADERS`."""
    return Response(msgspec.json.encode(body), status, {**API_HEADERS, **(headers or {})},
                    media_type="application/json")  # fmt: skip


def problem_response(problem: Problem) -> Response:
    """The JSON answer of `problem`."""
    return json_response(ApiError(error=problem.error, field=problem.field), problem.status,
                         problem.headers)  # fmt: skip
