"""The OpenAPI 3.1 document of the HTTP API (GET /v1/openapi.json), generated.

Every body and parameter schema comes from the msgspec types the API decodes and encodes with
(`filterd.web.api`, which uses the records of `filterd.service.records`, the source of
`schemas/`), through `msgspec.json.schema_components`: the document cannot drift from the code.
Only the list of operations is written here.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import msgspec

from filterd import __version__
from filterd.web import api

REF = "#/components/schemas/{name}"
SECURED: list[dict[str, list[str]]] = [{"token": []}, {"basic": []}]


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


@cache
def document() -> dict[str, Any]:
    """The API's OpenAPI document (made once: it depends on the code alone)."""
    kinds: list[Any] = [
        api.CheckRequest,
        api.FeedbackRequest,
        api.ForgetRequest,
        api.ListRequest,
        api.RuleRequest,
        api.ReviewQuery,
        *api.RESPONSES,
    ]
    schemas, components = msgspec.json.schema_components(kinds, ref_template=REF)
    # the query's: its component, below
    check_in, feedback_in, forget_in, list_in, rule_in, _query, *out = schemas
    of = dict(zip(api.RESPONSES, out))
    error = _json(of[api.ApiError])

    def answers(ok: type[msgspec.Struct], status: str, *errors: str) -> dict[str, Any]:
        described = {
            "400": "not JSON, or a Host header not in http.allowed_hosts",
            "401": "no credential, or a wrong one",
            "403": "a browser's request made by another site's page",
            "404": "not known",
            "413": "the body exceeds limits.max_bytes",
            "415": "a body that is not Content-Type: application/json",
            "422": "a field that does not validate: `field` names it",
            "429": "too many failed credentials from this address: see Retry-After",
            "503": "the store, the broker or the model is not available, or too many "
            "credential checks at once",
            "504": "the brokers did not acknowledge the label in time: it was sent, "
            "and may still be recorded",
        }
        return {
            status: {"description": "success", **_json(of[ok])},
            **{
                e: {"description": described[e], **error}
                for e in sorted({"401", "403", "429", *errors})
            },
        }

    parameters = [
        {"name": name, "in": "query", "required": False, "schema": schema}
        for name, schema in components["ReviewQuery"]["properties"].items()
    ]
    del components["ReviewQuery"]  # described by the parameters it makes
    paths = {
        "/v1/check": {
            "post": {
                "summary": "Decide on one message or up to 100, without learning",
                "requestBody": {"required": True, **_json(check_in)},
                "responses": answers(api.CheckResponse, "200", "400", "413", "415", "422", "503"),
            }
        },
        "/v1/feedback": {
            "post": {
                "summary": "Send a label to the feedback topic, as the authenticated analyst",
                "requestBody": {"required": True, **_json(feedback_in)},
                "responses": answers(
                    api.FeedbackAccepted, "202", "400", "413", "415", "422", "503", "504"
                ),
            }
        },
        "/v1/forget": {
            "post": {
                "summary": "Unlearn the labels a selector selects (an analyst's, a source's, "
                "within a time range, of given messages), as the authenticated analyst",
                "description": "Without `confirm` it only counts. Each label forgotten is taken "
                "back exactly and recorded on the audit trail (outcome forgotten).",
                "requestBody": {"required": True, **_json(forget_in)},
                "responses": answers(api.ForgetResult, "200", "400", "413", "415", "422", "503"),
            }
        },
        "/v1/decisions/{id}": {
            "get": {
                "summary": "What the store knows of a message's decision: "
                "provenance, review, labels",
                "description": "The id is one path segment, escaped (`/` as %2F). An id that is "
                "`.` or `..` is given as `/v1/decisions/?id=..`: clients remove dot "
                "segments from paths.",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": answers(api.DecisionInfo, "200", "404", "422", "503"),
            }
        },
        "/v1/review": {
            "get": {
                "summary": "The review queue, most informative first",
                "parameters": parameters,
                "responses": answers(api.ReviewPage, "200", "422", "503"),
            }
        },
        "/v1/model": {
            "get": {
                "summary": "Readiness, classes, thresholds, drift and delivered recall",
                "responses": answers(api.ModelInfo, "200", "503"),
            }
        },
        "/v1/lists": {
            "get": {
                "summary": "The entities on the allow, block and review lists",
                "responses": answers(api.ListsPage, "200", "503"),
            },
            "post": {
                "summary": "Put an entity on a list (replacing its entry), as the analyst",
                "requestBody": {"required": True, **_json(list_in)},
                "responses": answers(api.ListedEntity, "201", "400", "413", "415", "422", "503"),
            },
        },
        "/v1/lists/{key}/{value}": {
            "delete": {
                "summary": "Take an entity off its list, as the analyst",
                "description": "Key and value are path segments, escaped (`/` as %2F).",
                "parameters": [
                    {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                    for name in ("key", "value")
                ],
                "responses": answers(api.ListedEntity, "200", "404", "422", "503"),
            }
        },
        "/v1/rules": {
            "get": {
                "summary": "The rules over attributes and entity features",
                "responses": answers(api.RulesPage, "200", "503"),
            },
            "post": {
                "summary": "Add a rule (replacing the rule of its name), as the analyst",
                "description": "A condition that does not parse, or names an entity feature the "
                "configuration's [entities] lacks, is a 422 naming `$.when`.",
                "requestBody": {"required": True, **_json(rule_in)},
                "responses": answers(api.RuleInfo, "201", "400", "413", "415", "422", "503"),
            },
        },
        "/v1/rules/{name}": {
            "delete": {
                "summary": "Remove a rule, as the analyst",
                "parameters": [
                    {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": answers(api.RuleInfo, "200", "404", "422", "503"),
            }
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "filterd HTTP API", "version": __version__},
        "paths": paths,
        "security": SECURED,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "token": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "An API token NAME.SECRET (`filterd http new-token NAME`)",
                },
                "basic": {"type": "http", "scheme": "basic"},
            },
        },
    }
