"""Forgetting labels by selector (`filterd.store.forgetting`) over HTTP, as `filterd feedback
forget` forgets them, with the credential's or the session's analyst as the operator on the
audit trail: POST /v1/forget (counted, and forgotten only when the request confirms), and the
workbench's audit page (an analyst's or a sender's labels, counted on the page, forgotten by its
button)."""

from __future__ import annotations

from filterd.store.forgetting import Selector
from filterd.web.api import ForgetRequest, ForgetResult
from filterd.web.context import WebContext
from filterd.web.errors import Problem, decode_body


def forget_labels(context: WebContext, body: bytes, analyst: str) -> ForgetResult:
    """What `body` selects, forgotten if it confirms, or a Problem: 400 not JSON, 422 a field
    that does not validate or no criterion at all."""
    request: ForgetRequest = decode_body(body, ForgetRequest)
    try:
        selector = Selector(
            request.analyst,
            request.source,
            request.since,
            request.until,
            tuple(request.message_ids),
            request.sender,
        )
    except ValueError as error:
        raise Problem(422, str(error), "$") from None
    return _forget(context, selector, analyst, request.confirm)


def labels_of(context: WebContext, selector: Selector) -> ForgetResult:
    """How many labels in force `selector` selects (that forgetting them would take back)."""
    return _forget(context, selector, None, confirmed=False)


def forget_selected(context: WebContext, selector: Selector, operator: str) -> ForgetResult:
    """Every label in force that `selector` selects, forgotten by `operator` (the workbench)."""
    return _forget(context, selector, operator, confirmed=True)


def _forget(
    context: WebContext, selector: Selector, operator: str | None, confirmed: bool
) -> ForgetResult:
    """What `selector` selects, forgotten by `operator` if `confirmed`, else only counted."""
    config = context.config
    done = context.model.forget(
        selector,
        config.decision.target_class,
        operator=operator,
        dry_run=not confirmed,
        max_token_length=config.limits.max_token_length,
    )
    return ForgetResult(confirmed=confirmed, learned=len(done.learned), held_out=len(done.held_out))
