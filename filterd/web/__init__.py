"""The HTTP API and the analysts' workbench: versioned JSON endpoints over the daemon's own
scoring path, the store and the feedback topic, with authentication, and server-rendered pages
beside them. One module per job: `api` (the bodies, msgspec structs), `openapi` (the document
generated from them), `auth` (credentials → analyst), `errors` (JSON errors naming the field),
`check`, `feedback`, `reads` (the endpoints' work), `pages` and `views` (the workbench), `app`
(the Starlette app and request log), `server` (uvicorn in a thread), `serving` (the wiring
`filterd run` and `filterd serve` use), `context` (what the handlers share). A shell layer:
nothing below the daemon imports it. `__all__` names the modules other packages use rather
than re-exporting their names, which would load uvicorn, SQLAlchemy and Kafka's client (for
`serving`) into every user of `api` or `auth`."""

__all__ = ["auth", "serving"]
