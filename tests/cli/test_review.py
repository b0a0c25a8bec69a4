"""`filterd review` through click's runner, on a SQLite file: the queue listed and shown (text and
JSON, message text escaped), a label published to a real broker's feedback topic, and every
error as one line with a non-zero exit."""

import json
import socket
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict, Unpack

import pytest
from click.testing import CliRunner, Result

from filterd.bayes.model import ModelSpec
from filterd.cli import main
from filterd.service.records import Feedback, decode
from filterd.service.review import Reason, ReviewItem
from filterd.store.handle import Store
from filterd.store.labels import LabelledTokens
from tests.daemon.conftest import read_all
from tests.queued import queued

NOW = datetime.now(UTC).replace(microsecond=0)


class ItemFields(TypedDict, total=False):
    """The other fields of a `ReviewItem`, given or defaulted by `item`."""

    sender: str
    attributes: dict[str, Any]
    explanation: list[tuple[str, float]]
    tokens: list[str]


def item(
    message_id: str,
    score: float,
    reason: Reason = "band",
    subject: str | None = None,
    excerpt: str | None = None,
    **fields: Unpack[ItemFields],
) -> ReviewItem:
    return queued(
        message_id,
        score,
        threshold=0.5,
        reason=reason,
        model_version=4,
        threshold_version=2,
        subject=subject,
        excerpt=excerpt,
        sender=fields.get("sender"),
        attributes=fields.get("attributes"),
        explanation=fields.get("explanation", [("win", 1.5)]),
        tokens=fields.get("tokens", ["win", "prize"]),
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store whose model 'default' has three queued items; the message of "m-c" was labelled
    ham by alice since."""
    directory = tmp_path_factory.mktemp("store")
    url = f"sqlite:///{directory / 'store.db'}"
    opened = Store.open(url)
    opened.upgrade()
    model = opened.create_model("default", ModelSpec("mnb"), seed=0)
    items = [
        item(
            "m-a",
            0.52,
            subject="Win a prize\x1b[31m now",
            sender="Eve <eve@example.com>",
            attributes={"channel": "email"},
            explanation=[("win", 1.5), ("prize", 0.25)],
            tokens=["win", "prize", "now"],
        ),
        item("m-b", 0.9, reason="random", excerpt="Hello Bob,\nlunch tomorrow?\n\nAlice"),
        item("m-c", 0.45, subject="Your invoice"),
    ]
    with model.transaction() as writing:
        writing.queue_review(items[:2], NOW - timedelta(hours=2))
        writing.queue_review(items[2:], NOW - timedelta(hours=1))
    labelled = LabelledTokens("m-c", "ham", ["invoice"], analyst="alice", comment="a real one")
    model.learn([labelled], holdout_fraction=0)
    opened.close()
    return url


def ids(url: str, *args: str) -> dict[str, int]:
    """{message id: item id} of the queue, labelled items included."""
    result = run("list", "--db", url, "--all", "--json", *args)
    return {json.loads(line)["message_id"]: json.loads(line)["id"] for line in lines(result)}


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["review", *args], env=env)


def lines(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def one_line_error(result: Result, *fragments: str, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1 and error.startswith("Error: "), error
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in error, error
    return error


# --- list and show -------------------------------------------------------------------------------


def test_list_shows_unlabelled_items_closest_to_tau_first_escaped(store: str) -> None:
    shown = lines(run("list", "--db", store))
    assert [line.split()[0] for line in shown] == [str(ids(store)["m-a"]), str(ids(store)["m-b"])]
    first = shown[0]
    stamp = f"{NOW - timedelta(hours=2):%Y-%m-%d %H:%M}Z"
    assert first.split()[1:7] == [*stamp.split(), "band", "+0.5200", "vs", "τ"]
    assert "+0.5000  spam" in first
    assert first.endswith('"Win a prize\\u001b[31m now"')  # the escape sequence is not obeyed
    assert "\x1b" not in "".join(shown)
    assert shown[1].endswith("Hello Bob, lunch tomorrow? Alice")  # the excerpt, on one line


def test_list_all_order_reason_and_limit(store: str) -> None:
    every = lines(run("list", "--db", store, "--all"))
    assert [line.split()[0] for line in every] == [
        str(ids(store)[m]) for m in ("m-a", "m-c", "m-b")
    ]
    assert "labelled ham" in every[1] and every[1].endswith("Your invoice")
    assert "unlabelled" in every[0]
    newest = lines(run("list", "--db", store, "--all", "--order", "newest"))
    assert newest[0].split()[0] == str(ids(store)["m-c"])
    random_only = lines(run("list", "--db", store, "--reason", "random"))
    assert [line.split()[0] for line in random_only] == [str(ids(store)["m-b"])]
    assert len(lines(run("list", "--db", store, "--limit", "1"))) == 1


def test_list_json_has_every_field_but_the_tokens(store: str) -> None:
    (first, second) = [json.loads(line) for line in lines(run("list", "--db", store, "--json"))]
    assert first["message_id"] == "m-a" and second["message_id"] == "m-b"
    assert first["subject"] == "Win a prize\x1b[31m now"
    assert first["explanation"] == [["win", 1.5], ["prize", 0.25]]
    assert (first["token_count"], first["labelled"], first["reason"]) == (3, None, "band")
    assert datetime.fromisoformat(first["queued_at"]) == NOW - timedelta(hours=2)
    assert "tokens" not in first


def test_list_json_gives_an_item_with_the_keys_of_the_api(store: str) -> None:
    first = json.loads(lines(run("list", "--db", store, "--json"))[0])
    assert set(first) == set(ReviewItem.__struct_fields__) - {"tokens"}  # GET /v1/review's
    assert first["distance"] == pytest.approx(0.02)  # |0.52 − 0.5|


def test_show_gives_everything_stored_and_the_label_history(store: str) -> None:
    item_id = ids(store)["m-c"]
    text = lines(run("show", str(item_id), "--db", store))
    fields = {
        line.split()[0]: line.split(None, 1)[1]
        for line in text
        if not line.startswith(" ") and len(line.split()) > 1
    }
    assert fields["message"] == "m-c" and fields["subject"] == "Your invoice"
    assert fields["labelled"] == "ham" and fields["tokens"] == "2"
    assert fields["decision"].startswith("spam: score +0.4500 vs τ +0.5000")
    history = text[text.index("history:") + 1 :]
    assert len(history) == 1 and "→ ham" in history[0] and "alice" in history[0]
    assert '"a real one"' in history[0]

    shown = lines(run("show", str(ids(store)["m-a"]), "--db", store))
    assert "history: no label yet" in shown
    assert 'attributes  {"channel": "email"}' in shown
    assert "explanation win +1.5000, prize +0.2500" in shown
    assert 'subject     "Win a prize\\u001b[31m now"' in shown
    excerpt = lines(run("show", str(ids(store)["m-b"]), "--db", store))
    assert excerpt[excerpt.index("excerpt") + 1 : excerpt.index("excerpt") + 4] == [
        "  Hello Bob,",
        "  lunch tomorrow?",
        "  ",
    ]


def test_show_json_has_the_tokens_and_history(store: str) -> None:
    result = run("show", str(ids(store)["m-a"]), "--db", store, "--json")
    shown = json.loads(result.stdout)
    assert shown["tokens"] == ["win", "prize", "now"] and shown["token_count"] == 3
    assert shown["sender"] == "Eve <eve@example.com>" and shown["history"] == []
    labelled = json.loads(run("show", str(ids(store)["m-c"]), "--db", store, "--json").stdout)
    assert [(e["label"], e["analyst"], e["outcome"]) for e in labelled["history"]] == [
        ("ham", "alice", "learned")
    ]


# --- label ---------------------------------------------------------------------------------------


def config_file(
    tmp_path: Path,
    store: str,
    servers: str,
    feedback_topic: str,
    labels: Sequence[str] = ("ham", "spam"),
) -> str:
    path = tmp_path / "filterd.toml"
    path.write_text(
        f'[database]\nurl = "{store}"\n[kafka]\nbootstrap_servers = "{servers}"\n'
        f'[topics]\nfeedback = "{feedback_topic}"\n[model]\nlabels = {json.dumps(list(labels))}\n'
    )
    return str(path)


def test_label_publishes_feedback_naming_the_message(
    store: str, tmp_path: Path, kafka_config: dict[str, Any], topics: dict[str, str]
) -> None:
    config = config_file(tmp_path, store, kafka_config["bootstrap_servers"], topics["feedback"])
    item_id = ids(store)["m-a"]
    result = run(
        "label",
        str(item_id),
        "ham",
        "--config",
        config,
        "--comment",
        "a newsletter",
        env={"LOGNAME": "carol", "USER": "carol"},
    )
    (said,) = lines(result)
    assert said == f"sent ham by carol for item {item_id} (message m-a) to {topics['feedback']}"
    (record,) = read_all(kafka_config, topics["feedback"], until=lambda r: len(r) >= 1)
    assert record.key == b"m-a"
    feedback = decode(record.value, Feedback)
    assert (feedback.message_id, feedback.label, feedback.source) == ("m-a", "ham", "analyst")
    assert (feedback.analyst, feedback.comment) == ("carol", "a newsletter")
    assert not feedback.has_message  # the learner resolves it by id

    result = run("label", str(item_id), "spam", "--config", config, "--analyst", "dave")
    assert lines(result)[0].startswith("sent spam by dave for item")
    records = read_all(kafka_config, topics["feedback"], until=lambda r: len(r) >= 2)
    assert decode(records[-1].value, Feedback).analyst == "dave"


def test_label_errors_are_one_line(store: str, tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = config_file(tmp_path, store, f"127.0.0.1:{port}", "feedback")
    item_id = str(ids(store)["m-a"])
    one_line_error(run("label", item_id, "eggs", "--config", config), "'eggs'", "ham, spam", code=2)
    one_line_error(run("label", "999999", "ham", "--config", config), "no review item 999999")
    one_line_error(run("label", item_id, "ham", "--config", config, "--model", "nope"), "'nope'")
    one_line_error(
        run("label", item_id, "ham", "--config", config, "--comment", "x" * 3000), "comment", code=2
    )
    error = one_line_error(run("label", item_id, "ham", "--config", config, "--timeout", "1"))
    assert f"127.0.0.1:{port}" in error
    # any label goes when the configuration names none
    open_config = config_file(tmp_path, store, f"127.0.0.1:{port}", "feedback", labels=())
    error = one_line_error(run("label", item_id, "eggs", "--config", open_config, "--timeout", "1"))
    assert "could not publish" in error


def test_store_errors_are_one_line(store: str, tmp_path: Path) -> None:
    one_line_error(run("show", "999999", "--db", store), "no review item 999999", "'default'")
    one_line_error(run("list", "--db", store, "--model", "nope"), "no model named 'nope'")
    one_line_error(run("show", "1", "--db", store, "--model", "nope"), "no model named 'nope'")
    one_line_error(run("list", "--db", "mysql://x/y"), "unsupported database URL scheme")
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    one_line_error(run("list", "--db", empty), "filterd db upgrade")
    assert run("show", "abc", "--db", store).exit_code == 2  # click's own usage error
    assert run("list", "--db", store, "--reason", "other").exit_code == 2


def test_an_empty_queue_says_so(store: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    empty = Store.open(url)
    empty.upgrade()
    empty.create_model("default", ModelSpec("mnb"))
    assert lines(run("list", "--db", url)) == [
        "no items waiting for a label in the review queue of model 'default'"
    ]
    as_json = run("list", "--db", url, "--json")
    assert as_json.exit_code == 0 and as_json.stdout == ""  # JSON lines stay JSON lines
    assert as_json.stderr == "no items waiting for a label in the review queue of model 'default'\n"
    random_only = lines(run("list", "--db", store, "--reason", "random", "--all"))
    assert len(random_only) == 1  # a queue with items prints them, and nothing else


def test_a_label_without_a_broker_fails_within_seconds_naming_it(
    store: str, tmp_path: Path
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = config_file(tmp_path, store, f"127.0.0.1:{port}", "feedback")
    started = time.monotonic()
    error = one_line_error(run("label", str(ids(store)["m-a"]), "ham", "--config", config))
    assert time.monotonic() - started < 12  # not the 17 s it took
    assert error.startswith(
        f"Error: could not publish to the brokers 127.0.0.1:{port} (kafka.bootstrap_servers)"
    )
