"""A page on another site, open in an analyst's browser (headless chromium through Selenium),
against `filterd run` with `[http] enabled`: the browser keeps no password the API asked for,
and even a browser that sends the analyst's credential with every request cannot be made to
post a label from another site's page — nothing reaches the feedback topic."""

import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from filterd.demo.broker import free_port
from tests.daemon.conftest import StartDaemon, read_all, valid
from tests.web.browser import wait_until
from tests.web.conftest import PASSWORD, basic, call
from tests.web.test_workbench_browser import workbench

# A form the browser sends as text/plain: the field's name and value joined by "=" make JSON.
ATTACK = """<!doctype html><title>cats</title>
<form method="post" action="{target}" enctype="text/plain">
<input type="hidden"
  name='{{"message_id": "victim", "label": "spam", "text": "cheap pills", "comment": "'
  value='"}}'>
</form>
<script>document.forms[0].submit()</script>"""


@pytest.fixture
def other_site() -> Iterator[tuple[str, dict[str, str]]]:
    """Serves a page at http://localhost:PORT/: another site than http://127.0.0.1 to a
    browser (sites are told by their host names); its base URL. `page` holds the page."""
    page = {"html": ""}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page["html"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{server.server_address[1]}/", page
    server.shutdown()
    server.server_close()


def test_another_sites_page_cannot_label_as_the_analyst(
    browser: WebDriver,
    other_site: tuple[str, dict[str, str]],
    sqlite_url: str,
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    daemon, port = workbench(sqlite_url, start_daemon, monkeypatch)
    api = f"http://127.0.0.1:{port}"

    # the analyst answers the browser's password prompt for the API once (here: her password
    # in the URL, which a browser keeps as it keeps one typed into the prompt) ...
    browser.get(f"http://dana:{urllib.parse.quote(PASSWORD)}@127.0.0.1:{port}/v1/model")
    browser.get(api + "/v1/model")
    # ... and keeps nothing: the 401 challenges with a scheme no browser prompts for
    assert '"error":"authentication required' in browser.page_source, browser.page_source[:300]

    # a browser that sends her credential with every request anyway (as one that kept it would)
    browser.execute_cdp_cmd("Network.enable", {})
    credential = {"Authorization": basic("dana", PASSWORD)}
    browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": credential})
    base, page = other_site
    page["html"] = ATTACK.format(target=api + "/v1/feedback")
    browser.get(base)
    wait_until(lambda: browser.current_url.startswith(api), what="the form's answer")
    answer = browser.find_element("tag name", "body").text
    assert "another site" in answer and "Sec-Fetch-Site: cross-site" in answer, answer

    # the API's own clients are not affected; theirs is the only label on the topic. The
    # refused post was answered before this one was sent: had it been published, it would be
    # on the topic already.
    sent = call(
        port,
        "POST",
        "/v1/feedback",
        {"message_id": "own", "label": "ham"},
        auth=basic("dana", PASSWORD),
    )
    assert sent[0] == 202, sent
    records = read_all(
        kafka_config, topics["feedback"], until=lambda rs: any(b'"own"' in r.value for r in rs)
    )
    assert [valid("feedback", r.value)["message_id"] for r in records] == ["own"]
    assert daemon.metric("filterd_http_requests_total", route="/v1/feedback", status="403") == 1
