"""The workbench in a real browser (headless chromium through Selenium) against `filterd run`
with `[http] enabled`, the session's broker and a SQLite store: an analyst logs in, labels from
the queue with the keyboard, in bulk and from a message page, and sees the labels on the audit
page and in the store's ledger; a calibration previewed and applied on the model page becomes
the threshold the daemon decides with. Each page is saved as a screenshot (tests/web/browser.py).
"""

import json
from typing import Any

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from sqlalchemy import Engine, func, select

from filterd.demo.broker import free_port
from filterd.evaluation.synth import SynthConfig, generate
from filterd.service.passwords import hash_secret
from filterd.store.database import connect
from filterd.store.schema import Base, FeedbackLedger, LabelEvent, Prequential, ReviewItem
from tests.daemon.conftest import DaemonProcess, StartDaemon, feedback, produce, read_all, valid
from tests.web.browser import screenshot, wait_until
from tests.web.conftest import PASSWORD, ROUNDS, basic, call, learned_store


def workbench(
    sqlite_url: str,
    start_daemon: StartDaemon,
    monkeypatch: pytest.MonkeyPatch,
    role: str = "all",
    **sections: dict[str, Any],
) -> tuple[DaemonProcess, int]:
    """`filterd run` over a learned store, serving the workbench, analyst dana; its base URL."""
    learned_store(sqlite_url)
    users = '{dana = "%s"}' % hash_secret(PASSWORD, "pbkdf2_sha256", rounds=ROUNDS)
    monkeypatch.setenv("FILTERD_HTTP_USERS", users)
    port = free_port()
    daemon = start_daemon(
        sqlite_url,
        role=role,  # each keyword given: `sections` are configuration sections alone
        config=None,
        create_store=False,
        env=None,
        http={"enabled": True, "port": port},
        model={"min_docs": 5, "variant": "mnb", "holdout_fraction": 0.0},
        **sections,
    )
    daemon.wait_for(lambda: daemon.get("/readyz")[0] == 200, what="readiness")
    return daemon, port


def log_in(driver: WebDriver, base: str, path: str) -> None:
    driver.get(base + path)
    assert "/login" in driver.current_url  # no session yet: sent to the login page
    driver.find_element(By.NAME, "name").send_keys("dana")
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form.login button").click()
    wait_until(lambda: driver.current_url.endswith(path), what=f"{path} after logging in")


def press(driver: WebDriver, keys: str) -> None:
    ActionChains(driver).send_keys(keys).perform()


def queued(driver: WebDriver) -> list[str]:
    """The message ids of the queue's rows, read in one go (htmx may be swapping one out)."""
    script = "return Array.from(document.querySelectorAll('tr.item'), r => r.dataset.messageId)"
    ids: list[str] = driver.execute_script(script)
    return ids


def rows_in(engine: Engine, table: type[Base]) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def ledger(engine: Engine) -> dict[str, str]:
    with engine.connect() as conn:
        return dict(conn.execute(select(FeedbackLedger.message_id, FeedbackLedger.label)).all())


def test_an_analyst_labels_from_the_queue_and_sees_it_audited(
    browser: WebDriver,
    sqlite_url: str,
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a band wide enough that the scorer queues every decision for review
    daemon, port = workbench(sqlite_url, start_daemon, monkeypatch, review={"band": 1000.0})
    base = f"http://127.0.0.1:{port}"
    texts = [r["text"] for r in generate(SynthConfig(n_messages=40, seed=1))][:12]
    produce(
        kafka_config,
        topics["messages"],
        [
            json.dumps({"id": f"w{i}", "text": t, "subject": f"Offer <b>{i}</b>"}).encode()
            for i, t in enumerate(texts)
        ],
    )
    engine = connect(sqlite_url)
    daemon.wait_for(lambda: rows_in(engine, ReviewItem) == 12, what="12 items in the review queue")

    log_in(browser, base, "/queue")
    rows = queued(browser)
    assert sorted(rows) == sorted(f"w{i}" for i in range(12))
    assert "Offer <b>0</b>" in browser.page_source.replace("&lt;", "<").replace("&gt;", ">")
    assert not browser.find_elements(By.CSS_SELECTOR, "td b")  # the subject is text, not markup
    screenshot(browser, "queue")

    # the first row is current: "s" labels it spam, and it leaves the queue at once
    first = rows[0]
    press(browser, "s")
    wait_until(lambda: first not in queued(browser), what="the labelled row to leave the queue")
    daemon.wait_for(lambda: ledger(engine).get(first) == "spam", what="the label in the ledger")
    browser.get(base + "/queue")
    assert first not in queued(browser)  # learned: no longer waiting for a label

    # bulk: x selects the current row and the next, one button labels both
    rows = queued(browser)
    press(browser, "x")
    press(browser, "j")
    press(browser, "x")
    browser.find_element(By.CSS_SELECTOR, "#bulk button[value='ham']").click()
    daemon.wait_for(
        lambda: {ledger(engine).get(m) for m in rows[:2]} == {"ham"},
        what="the bulk labels in the ledger",
    )

    # the message page: "o" opens the current row; a comment, then "h" labels it ham
    browser.get(base + "/queue")
    target = queued(browser)[0]
    press(browser, "o")
    wait_until(lambda: "/messages/" in browser.current_url, what="the message page")
    assert browser.find_element(By.TAG_NAME, "code").text == target
    assert browser.find_elements(By.CSS_SELECTOR, "table.bars .bar")  # per-token contributions
    screenshot(browser, "message")
    press(browser, "c")
    press(browser, "looks like a newsletter")
    browser.execute_script("document.activeElement.blur()")
    press(browser, "h")
    daemon.wait_for(lambda: ledger(engine).get(target) == "ham", what="the message page's label")

    # the audit page: dana's events, the comment kept
    browser.get(base + "/audit?analyst=dana")
    events = {
        r.get_attribute("data-message-id"): r.text
        for r in browser.find_elements(By.CSS_SELECTOR, "tr.event")
    }
    assert set(events) == {first, *rows[:2], target}
    assert "spam" in events[first] and "looks like a newsletter" in events[target]
    screenshot(browser, "audit")
    with engine.connect() as conn:
        analysts = set(
            conn.execute(
                select(LabelEvent.analyst).where(
                    LabelEvent.message_id.in_([first, *rows[:2], target])
                )
            ).scalars()
        )
    assert analysts == {"dana"}  # from the session, on every label
    # every label went through the feedback topic, as the session's analyst
    sent = read_all(kafka_config, topics["feedback"], until=lambda rs: len(rs) >= 4)
    assert {valid("feedback", r.value)["analyst"] for r in sent} == {"dana"}

    # the audit page offers to forget dana's labels in force: one button, and they are unlearned
    offer = browser.find_element(By.CSS_SELECTOR, "form.forget").text
    assert "4 labels in force given by dana" in offer
    browser.find_element(By.CSS_SELECTOR, "form.forget button").click()
    wait_until(lambda: not browser.find_elements(By.CSS_SELECTOR, "form.forget"), what="forgotten")
    outcomes = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "tr.event")]
    assert sum("forgotten" in text for text in outcomes) == 4
    assert not set(ledger(engine)) & {first, *rows[:2], target}
    screenshot(browser, "audit-forgotten")
    log = daemon.log()
    assert PASSWORD not in log and "filterd_session=" not in log  # no secret is logged
    engine.dispose()


def test_a_calibration_applied_on_the_model_page_is_the_daemons_next_threshold(
    browser: WebDriver,
    sqlite_url: str,
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # no calibration job of the daemon's own: the only new version is the page's
    daemon, port = workbench(
        sqlite_url,
        start_daemon,
        monkeypatch,
        intervals={"calibrate_seconds": 0, "threshold_reload_seconds": 0.5},
    )
    base = f"http://127.0.0.1:{port}"
    labelled = generate(SynthConfig(n_messages=300, seed=1))
    produce(
        kafka_config,
        topics["feedback"],
        [feedback(f"f{i}", r["label"], r["text"]) for i, r in enumerate(labelled)],
    )
    engine = connect(sqlite_url)
    daemon.wait_for(
        lambda: rows_in(engine, Prequential) == 300, what="300 labels scored on arrival"
    )

    log_in(browser, base, "/model")
    assert browser.find_element(By.ID, "readiness").text == "ready"
    assert "no data yet" not in browser.find_element(By.ID, "auc-chart").text  # the drift monitor's
    field = browser.find_element(By.ID, "target-recall")
    field.clear()
    field.send_keys("0.9")
    browser.find_element(By.ID, "preview-button").click()  # htmx: the preview alone is replaced
    wait_until(
        lambda: browser.find_elements(By.CSS_SELECTOR, "#preview input[value='0.9']"),
        what="the preview at recall 0.9",
    )
    previewed = float(browser.find_element(By.ID, "preview-tau").text)
    assert browser.find_element(By.CSS_SELECTOR, "#preview svg")  # the ROC
    screenshot(browser, "model")
    browser.find_element(By.ID, "apply").click()
    applied = wait_until(
        lambda: browser.find_elements(By.ID, "applied"), what="the applied version"
    )
    assert applied[0].text.startswith("Threshold version 1 written"), applied[0].text
    tau = float(browser.find_element(By.ID, "tau").text)
    assert abs(tau - previewed) < 1e-3  # the same window, read again

    # the daemon decides with it: the next decision carries version 1 and its τ
    auth = basic("dana", PASSWORD)
    daemon.wait_for(
        lambda: call(port, "GET", "/v1/model", auth=auth)[1]["scoring"]["threshold_version"] == 1,
        what="the daemon to load version 1",
    )
    produce(
        kafka_config,
        topics["messages"],
        [json.dumps({"id": "after", "text": labelled[0]["text"]}).encode()],
    )
    (record,) = read_all(kafka_config, topics["decisions"], until=lambda rs: len(rs) >= 1)
    decision = valid("decision", record.value)
    assert decision["threshold_version"] == 1 and abs(decision["threshold"] - tau) < 1e-3
    engine.dispose()


ATTACKER = "../messages/VICTIM"  # an id chosen to look like a path to another message
SPOOF = "support@\u202emoc.knab-ruoy"  # shows as support@your-bank.com where bidi is obeyed
# where the first and the last letter of "moc.knab-ruoy" are drawn, left to right
LETTERS_AT = """
const walker = document.createTreeWalker(arguments[0], NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const at = node.data.indexOf("moc.knab-ruoy");
  if (at < 0) continue;
  const left = i => { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
                      return r.getBoundingClientRect().left; };
  return [left(at), left(at + 12)];
}
return null;
"""


def sender_drawn_in_order(driver: WebDriver, element: WebElement) -> bool:
    """Whether "moc.knab-ruoy" is drawn left to right in `element`: its "m" left of its "y"."""
    first, last = driver.execute_script(LETTERS_AT, element)
    drawn: bool = first < last
    return drawn


def test_a_senders_id_and_sender_cannot_redirect_or_disguise_a_label(
    browser: WebDriver,
    sqlite_url: str,
    start_daemon: StartDaemon,
    kafka_config: dict[str, Any],
    topics: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    daemon, port = workbench(sqlite_url, start_daemon, monkeypatch, review={"band": 1000.0})
    base = f"http://127.0.0.1:{port}"
    texts = [r["text"] for r in generate(SynthConfig(n_messages=40, seed=1))][:3]
    records = [
        {"id": ATTACKER, "text": texts[0]},
        {"id": "VICTIM", "text": texts[1]},
        {"id": "spoof", "text": texts[2], "sender": SPOOF},
    ]
    produce(kafka_config, topics["messages"], [json.dumps(r).encode() for r in records])
    engine = connect(sqlite_url)
    daemon.wait_for(lambda: rows_in(engine, ReviewItem) == 3, what="3 items in the review queue")

    log_in(browser, base, "/queue")
    assert sorted(queued(browser)) == sorted([ATTACKER, "VICTIM", "spoof"])
    # the attacker's row's button labels the attacker's message, not the one its id names
    row = browser.find_element(By.CSS_SELECTOR, f'tr.item[data-message-id="{ATTACKER}"]')
    buttons = row.find_elements(By.CSS_SELECTOR, "button.label")
    next(b for b in buttons if b.text.startswith("spam")).click()
    wait_until(lambda: ATTACKER not in queued(browser), what="the labelled row to leave the queue")
    daemon.wait_for(lambda: ATTACKER in ledger(engine), what="the label in the ledger")
    assert ledger(engine).get(ATTACKER) == "spam" and "VICTIM" not in ledger(engine)

    # its page, from its link: the attacker's message, labelled from there too
    browser.get(base + "/queue?include_labelled=true")
    browser.find_element(By.CSS_SELECTOR, f'tr.item[data-message-id="{ATTACKER}"] a.open').click()
    wait_until(lambda: "/messages/" in browser.current_url, what="the message page")
    assert browser.find_element(By.TAG_NAME, "code").text == ATTACKER
    press(browser, "h")
    daemon.wait_for(lambda: ledger(engine).get(ATTACKER) == "ham", what="the message page's label")
    assert "VICTIM" not in ledger(engine)
    sent = read_all(kafka_config, topics["feedback"], until=lambda rs: len(rs) >= 2)
    assert [valid("feedback", r.value)["message_id"] for r in sent] == [ATTACKER, ATTACKER]

    # a sender's bidi control is shown, and the text after it drawn in its logical order
    browser.get(base + "/queue")
    row = browser.find_element(By.CSS_SELECTOR, 'tr.item[data-message-id="spoof"] div.small')
    assert "support@⟨U+202E⟩moc.knab-ruoy" in row.text
    assert sender_drawn_in_order(browser, row)  # not reversed into "your-bank.com"
    screenshot(browser, "hostile-queue")
    browser.find_element(By.CSS_SELECTOR, 'tr.item[data-message-id="spoof"] a.open').click()
    wait_until(lambda: "/messages/" in browser.current_url, what="the message page")
    sender = browser.find_element(By.XPATH, "//dt[text()='From']/following-sibling::dd[1]")
    assert sender.text == "support@⟨U+202E⟩moc.knab-ruoy"
    assert sender_drawn_in_order(browser, sender)
    screenshot(browser, "hostile-message")
    engine.dispose()
