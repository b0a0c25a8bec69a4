"""Reading a request's body within a limit, for the API and the workbench's forms alike."""

from __future__ import annotations

from starlette.requests import ClientDisconnect, Request

from filterd.web.errors import Problem


async def read_body(request: Request, limit: int, setting: str = "limits.max_bytes") -> bytes:
    """The request's body, or a 413 Problem as soon as it exceeds `limit` bytes, the value of
    `setting` (a declared Content-Length over it is refused before reading); a 408 Problem when
    the connection closes first (the client went away, or the server closed it at
    `http.request_seconds`: filterd.web.server), answered to no one but logged as any request."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise Problem(413, f"the body of {declared} bytes exceeds {setting} ({limit})")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise Problem(413, f"the body exceeds {setting} ({limit})")
            chunks.append(chunk)
    except ClientDisconnect:
        raise Problem(408, "the connection closed before the body arrived whole") from None
    return b"".join(chunks)
