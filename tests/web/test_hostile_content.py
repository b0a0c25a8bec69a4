"""What senders choose, on the workbench's pages (uvicorn on a free port, a learned SQLite store,
the session's broker): message ids that look like paths, queries, fragments, escapes or dot
segments reach exactly their own message through every link, form and button, as a browser
resolves them; and invisible characters (bidi controls among them) are shown, not obeyed."""

import html
import re
import unicodedata
import urllib.parse
from typing import Any

import pytest

from filterd.service.config import Config
from filterd.store.labels import LabelledTokens
from filterd.web.serving import Api
from filterd.web.visible import visible
from tests.daemon.conftest import read_all, valid
from tests.web.client import Client, as_browser_sends, csrf_of
from tests.web.conftest import WorkbenchOf, queue_messages

# ids a sender may choose (any string of 1 to 256 characters without NUL is a message id)
IDS = [
    "../messages/VICTIM",
    "VICTIM",
    "a/b",
    "a/label",
    "/",
    "/label",
    "x/",
    "x?y=1#z",
    "100%",
    "a%2Fb",
    "%2e%2e",
    "with space",
    "ünïcødé ✓",
    "..",
    ".",
    "./x",
    "a\\b",
    "tab\there",
    "\u202eevil",
]


def rows(page: str) -> list[tuple[str, str, str]]:
    """(message id, the link that opens it, the URL its label buttons post to) of each row."""
    found = []
    for row in page.split('<tr class="item"')[1:]:
        message_id = html.unescape(link(row, r'data-message-id="([^"]*)"'))
        opened = link(row, r'<a class="open" href="([^"]*)"')
        posted = set(re.findall(r'hx-post="([^"]*)"', row))
        assert len(posted) == 1  # every button of the row posts to the same URL
        found.append((message_id, opened, posted.pop()))
    return found


def shown_id(page: str) -> str:
    return link(page, r'<code id="message-id">(.*?)</code>')


def link(page: str, pattern: str) -> str:
    """The first group of `pattern`'s first match in `page`, which must have one."""
    found = re.search(pattern, page)
    assert found is not None, pattern
    return found.group(1)


@pytest.fixture
def hostile(learned_config: Config, workbench_of: WorkbenchOf) -> tuple[Api, Client]:
    """The workbench with one queued message for each of IDS; a client logged in as dana, and
    the queue's ids in their order."""
    api, state = workbench_of(learned_config)
    queue_messages(
        api.context.config,
        state,
        [{"id": m, "text": f"message number {i}"} for i, m in enumerate(IDS)],
    )
    client = Client(api.port)
    client.log_in()
    return api, client


def test_every_link_form_and_button_reaches_the_message_it_is_for(
    hostile: tuple[Api, Client], kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    api, client = hostile
    status, page, _ = client.get("/queue?limit=500")
    assert status == 200
    queue = rows(page)
    order = [message_id for message_id, _, _ in queue]
    assert sorted(order) == sorted(IDS)
    token = csrf_of(page)
    for i, (message_id, opened, posted) in enumerate(queue):
        # the row's link: that message's page, at its place in the queue
        status, message, _ = client.get(as_browser_sends(opened))
        assert status == 200 and shown_id(message) == str(visible(message_id)), message_id
        # its neighbours' links
        if i + 1 < len(order):
            after = client.get(as_browser_sends(link(message, r'<a id="next" href="([^"]*)"')))
            assert shown_id(after[1]) == str(visible(order[i + 1]))
        if i > 0:
            before = client.get(as_browser_sends(link(message, r'<a id="prev" href="([^"]*)"')))
            assert shown_id(before[1]) == str(visible(order[i - 1]))
        # the label form labels it, and goes on to the next item
        action = link(message, r'<form method="post" action="([^"]*)" id="label-form"')
        after_label = html.unescape(
            link(message, r'<input type="hidden" name="next" value="([^"]*)"')
        )
        status, _, headers = client.post(
            as_browser_sends(action), {"label": "ham", "csrf": token, "next": after_label}
        )
        assert status == 303
        landed = client.get(as_browser_sends(headers["location"]))[1]
        expected = order[i + 1] if i + 1 < len(order) else None
        assert (shown_id(landed) if expected else "Review queue") in landed
        if expected:
            assert shown_id(landed) == str(visible(expected))
        # the row's buttons (htmx) label it too
        status, _, _ = client.post(
            as_browser_sends(posted),
            {"label": "spam"},
            {"HX-Request": "true", "X-CSRF-Token": token},
        )
        assert status == 200, message_id
        # logged out, the link leads to the login page and back to the same message
        stranger = Client(api.port)
        status, _, headers = stranger.get(as_browser_sends(opened))
        assert status == 303
        query = urllib.parse.urlsplit(headers["location"]).query
        back = urllib.parse.parse_qs(query)["next"][0]
        status, _, headers = stranger.log_in(next=back)
        assert status == 303
        assert shown_id(stranger.get(as_browser_sends(headers["location"]))[1]) == str(
            visible(message_id)
        )

    sent = read_all(kafka_config, topics["feedback"], until=lambda rs: len(rs) >= 2 * len(IDS))
    labelled = sorted(
        (r["message_id"], r["label"]) for r in (valid("feedback", s.value) for s in sent)
    )
    assert labelled == sorted([(m, "ham") for m in IDS] + [(m, "spam") for m in IDS])

    # the audit trail's links, once the labels are learned
    api.context.model.learn(
        [LabelledTokens(m, "spam", ["t"], analyst="erin") for m in IDS], holdout_fraction=0
    )
    audit = client.get("/audit?analyst=erin")[1]
    links = re.findall(r'<tr class="event" data-message-id="([^"]*)">.*?<a href="([^"]*)">', audit)
    assert sorted(html.unescape(m) for m, _ in links) == sorted(IDS)
    for message_id, href in links:
        status, message, _ = client.get(as_browser_sends(href))
        assert status == 200 and shown_id(message) == str(visible(html.unescape(message_id)))


SPOOF = "support@\u202emoc.knab-ruoy"  # shows as support@your-bank.com where bidi is obeyed


def invisible_in_text(page: str) -> set[str]:
    """The invisible characters of `page`'s text (its markup and attribute values aside)."""
    text = html.unescape(re.sub(r"<[^>]*>", "", page))
    return {
        ch
        for ch in text
        if unicodedata.category(ch) in {"Cf", "Cc", "Zl", "Zp"} or ch in "\u034f\ufe0f\u3164"
    } - set("\t\n\r")


def test_invisible_characters_are_shown_not_obeyed(
    learned_config: Config, workbench_of: WorkbenchOf
) -> None:
    api, state = workbench_of(learned_config)
    message: dict[str, Any] = {
        "id": "bidi\u2066id",
        "sender": SPOOF,
        "subject": "Invoice \u202egpj.exe",
        "text": "pay\u200b now\u2028please\x1b[31m\nsecond line\u061c v\u034fi\ufe0fa\u3164gra",
        "attributes": {"reply\u200eto": "x\u2067y", "n": 1},
    }
    queue_messages(api.context.config, state, [message])
    client = Client(api.port)
    client.log_in()
    queue = client.get("/queue")[1]
    page = client.get(f"/messages/{urllib.parse.quote(message['id'], safe='')}")[1]
    assert invisible_in_text(queue) == invisible_in_text(page) == set()
    marked = '<span class="ctl" title="RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>'
    assert f"support@{marked}moc.knab-ruoy" in queue and f"support@{marked}moc.knab-ruoy" in page
    assert f"Invoice {marked}gpj.exe" in page
    assert "<title>Invoice ⟨U+202E⟩gpj.exe · filterd</title>" in page  # text only in a title
    for code in ("2066", "200B", "2028", "001B", "061C", "200E", "2067", "034F", "FE0F", "3164"):
        assert f"⟨U+{code}⟩" in page, code
    assert "\nsecond line" in page  # the excerpt keeps its line breaks

    api.context.model.learn(
        [LabelledTokens(message["id"], "spam", ["t"], analyst="erin", comment="fine\u202eenif")],
        holdout_fraction=0,
    )
    audit = client.get("/audit?analyst=erin")[1]
    assert invisible_in_text(audit) == set() and "fine<span class" in audit
