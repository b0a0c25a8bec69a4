"""The HTTP API (issue 24's first slice): versioned JSON endpoints over the daemon's own scoring
path, the store and the feedback topic, with authentication.

One module per job: `api` (the bodies, msgspec structs), `openapi` (the document generated from
them), `auth` (credentials → analyst), `errors` (JSON errors naming the field), `check`,
`feedback`, `reads` (the endpoints' work), `app` (the Starlette app and request log), `server`
(uvicorn in a thread), `serving` (the wiring `filterd run` and `filterd serve` use), `context`
(what the handlers share). A shell layer: nothing below the daemon imports it.
"""
